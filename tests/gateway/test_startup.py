"""Operator mistakes at start: the real CLI exits 1 with one line naming what to fix, never a traceback.

Each test runs ``switchboard`` as a subprocess on a temporary state directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import subprocess
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from gateway.cli import EXIT_CONFIG
from gateway.store import SCHEMA_VERSION
from platforms.fakes.telegram import FakeTelegram
from tests.gateway.cli_process import (
    Running,
    environment,
    on_private_tmpfs,
    problem_lines,
    run,
    together,
    write_config,
)

TOKEN = "777002:AAE-abcdefghijklmnopqrstuvwxyz0123456"
WEBHOOK = {"server": {"port": 0},
           "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "s3cret-0"}}}}}


def only_line(result, status: int = 1) -> str:
    """The single operator-facing line of a command that failed with ``status``; no traceback anywhere.
    `EXIT_CONFIG` for what only the operator can mend, which a restart would fail on alike."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = problem_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path / "switchboard.yaml", {**WEBHOOK, "state_dir": str(tmp_path / "state")})


@pytest.fixture(scope="module")
def gateway_made(tmp_path_factory):
    """A state directory one real gateway started on and stopped cleanly: copied where a test needs one,
    instead of a start of its own that would only make the same files."""
    tmp_path = tmp_path_factory.mktemp("made")
    config = write_config(tmp_path / "switchboard.yaml", {**WEBHOOK, "state_dir": str(tmp_path / "state")})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
    assert gateway.proc.returncode == 0
    return tmp_path / "state"


@pytest.fixture
def made_state(tmp_path, gateway_made):
    """``tmp_path / "state"``: a copy of `gateway_made`, its modes kept."""
    return Path(shutil.copytree(gateway_made, tmp_path / "state"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_second_gateway_on_the_same_state_directory_exits_naming_the_first(tmp_path, config):
    with Running(tmp_path, "--config", str(config)) as first:
        first.started()
        second, turn = together(lambda: run(tmp_path, "run", "--config", str(config)),
                                lambda: run(tmp_path, "ask", "hi", "--config", str(config)))
        line = only_line(second)
        assert f"state directory {tmp_path / 'state'} is in use by pid {first.proc.pid}" in line
        assert turn.returncode == 1  # nor may a one-off turn
        assert first.proc.poll() is None  # the first keeps running
    assert first.proc.returncode == 0
    with Running(tmp_path, "--config", str(config)) as again:  # the lock went with the process
        again.started()


def test_a_state_path_that_is_a_file(tmp_path, config):
    (tmp_path / "state").write_text("not a directory")
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert f"state directory {tmp_path / 'state'} is a file, not a directory" in line and "state_dir" in line


def test_a_database_that_is_a_directory(tmp_path, config):
    (tmp_path / "state" / "switchboard.db").mkdir(parents=True)
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert f"state database {tmp_path / 'state' / 'switchboard.db'} is a directory" in line


@pytest.mark.parametrize("content", [b"just some text\n", os.urandom(8192), b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_corrupt_or_foreign_database(tmp_path, config, content):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "switchboard.db").write_bytes(content)
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert f"state database {tmp_path / 'state' / 'switchboard.db'}" in line
    assert "move it away" in line


def test_a_database_with_a_damaged_table_is_refused_before_a_message_is_taken(tmp_path, made_state, config):
    # Its header and schema read fine: without a check of every page, the gateway would start and
    # then fail each message it was handed, as a restored torn copy or a bad disk block would make it.
    db = tmp_path / "state" / "switchboard.db"
    conn = sqlite3.connect(db)
    (root, page_size) = conn.execute("SELECT rootpage, (SELECT page_size FROM pragma_page_size)"
                                     " FROM sqlite_master WHERE name = 'gateway_inbox'").fetchone()
    conn.close()
    with db.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xa5" * page_size)
    before = db.read_bytes()
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert line.startswith(f"switchboard: state database {db} is corrupt (") and "move it away" in line
    assert db.read_bytes() == before


def test_a_backup_restored_beside_the_log_of_the_database_it_replaced(tmp_path, made_state, config):
    # A backup copied over the database of a gateway that did not stop cleanly: SQLite would read the
    # -wal that gateway left as the backup's own. The line says which files to move; then it starts.
    state = tmp_path / "state"
    db, wal = state / "switchboard.db", state / "switchboard.db-wal"
    backup = sqlite3.connect(tmp_path / "backup.db")
    with sqlite3.connect(db) as source:
        source.backup(backup)
    backup.close()
    live = sqlite3.connect(db, isolation_level=None)  # the gateway's writes after the backup, some checkpointed
    live.execute("PRAGMA wal_autocheckpoint=0")
    payload = '{"chat_id": "c", "text": "%s"}' % ("x" * 300)
    live.executemany("INSERT INTO gateway_inbox (platform, event_id, payload, status, received_at)"
                     " VALUES ('web', ?, ?, 'done', 1)", [(f"e{i}", payload) for i in range(2000)])
    live.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    live.execute("DELETE FROM gateway_inbox WHERE event_id LIKE 'e1%'")
    left = wal.read_bytes()  # as a crash leaves it
    live.close()
    db.write_bytes((tmp_path / "backup.db").read_bytes())
    wal.write_bytes(left)
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert f"state database {db} is corrupt" in line
    assert "if a backup was just put in its place, move switchboard.db-wal and switchboard.db-shm away" in line
    assert db.read_bytes() == (tmp_path / "backup.db").read_bytes() and wal.read_bytes() == left
    wal.unlink()
    (state / "switchboard.db-shm").unlink(missing_ok=True)
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()


def test_a_good_database_is_left_alone(tmp_path, config):
    (tmp_path / "state").mkdir()
    sqlite3.connect(tmp_path / "state" / "switchboard.db").close()  # empty but valid
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
    assert gateway.proc.returncode == 0


def test_a_write_ahead_log_without_its_database_is_not_thrown_away(tmp_path, config):
    # The database moved away (as the corrupt-database line says to) or lost, its -wal left behind:
    # SQLite would start a new empty database and delete the -wal, with the last commits in it.
    state = tmp_path / "state"
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
        wal = (state / "switchboard.db-wal").read_bytes()
    (state / "switchboard.db").unlink()
    (state / "switchboard.db-wal").write_bytes(wal)
    line = only_line(run(tmp_path, "run", "--config", str(config)))
    assert f"{state / 'switchboard.db-wal'} holds the last commits of a database, but {state / 'switchboard.db'}" \
           " is missing" in line
    assert (state / "switchboard.db-wal").read_bytes() == wal and not (state / "switchboard.db").exists()


@pytest.mark.parametrize("command", [("run",), ("inbox", "dead"), ("inbox", "retry", "1")])
def test_a_database_of_a_newer_version_is_refused_naming_both_versions(tmp_path, made_state, config, command):
    db = tmp_path / "state" / "switchboard.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE gateway_meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()  # the last connection: checkpointed into the file, no -wal left
    before = db.read_bytes()
    # Every start fails alike until the operator runs the newer version or restores a backup: not restarted.
    line = only_line(run(tmp_path, *command, "--config", str(config)), EXIT_CONFIG)
    assert line.startswith(f"switchboard: state database {db} was written by a newer switchboard (gateway"
                           f" schema 99; this one reads up to {SCHEMA_VERSION})"), line
    assert db.read_bytes() == before


@pytest.mark.parametrize("command", [("run",), ("ask", "hi")])
def test_a_lifecycle_journal_of_a_newer_version_is_refused_naming_the_file(tmp_path, made_state, config, command):
    # The journal keeps its schema version apart from the gateway's (SQLite's user_version): a newer
    # build may have moved only that one.
    db = tmp_path / "state" / "switchboard.db"
    conn = sqlite3.connect(db)
    (ours,) = conn.execute("PRAGMA user_version").fetchone()
    conn.execute(f"PRAGMA user_version = {ours + 6}")
    conn.close()
    before = db.read_bytes()
    line = only_line(run(tmp_path, *command, "--config", str(config)), EXIT_CONFIG)  # as the database's
    assert line == (f"switchboard: {db} was written by a newer version (lifecycle journal schema {ours + 6};"
                    f" this one reads up to {ours}): run that version or a later one, or restore a backup this"
                    " version made"), line
    assert db.read_bytes() == before


def test_a_port_in_use_names_server_port(tmp_path, config):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(tmp_path, "run", "--config", str(config), "--set", f"server.port={port}")
    line = only_line(result)
    assert f"server.port: 127.0.0.1:{port} is already in use" in line
    # Nothing was started before the port was found taken: no platform, no replayed event.
    assert "platform webhook started" not in result.stderr


def test_of_two_problems_the_first_checked_is_said_as_the_docs_order_them(tmp_path, config):
    # docs/gateway.md, "What stops a start": the model server before the port; the state directory
    # and workspace before another gateway's lock on the directory.
    url = f"http://127.0.0.1:{free_port()}/v1"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        line = only_line(run(tmp_path, "run", "--config", str(config), "--set", "model.provider=openai",
                             "--set", f"model.base_url={url}", "--set", f"server.port={taken.getsockname()[1]}"))
    assert line.startswith(f"switchboard: model.base_url: cannot reach {url}"), line
    (tmp_path / "a-file").write_text("not a directory")
    with Running(tmp_path, "--config", str(config)) as first:
        first.started()
        line = only_line(run(tmp_path, "run", "--config", str(config), "--set", f"agent.workspace={tmp_path}/a-file"))
    assert line.startswith(f"switchboard: agent.workspace: {tmp_path / 'a-file'} is a file"), line


def test_an_unreachable_model_names_the_url(tmp_path, config):
    url = f"http://127.0.0.1:{free_port()}/v1"
    commands = (["run"], ["chat"], ["ask", "hello"])
    # Each on a state directory of its own, as the model server is checked once the directory is locked.
    results = together(*(partial(run, tmp_path, *args, "--config", str(config), "--set", "model.provider=openai",
                                 "--set", f"model.base_url={url}", "--set", f"state_dir={tmp_path / args[0]}")
                         for args in commands))
    for result in results:
        line = only_line(result)
        assert line.startswith(f"switchboard: model.base_url: cannot reach {url} (connection refused")


def test_a_missing_state_directory_is_created(tmp_path):
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(tmp_path / "a" / "b" / "state")})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
    assert (tmp_path / "a" / "b" / "state" / "switchboard.db").is_file()


@pytest.mark.parametrize("existing", [False, True], ids=["created", "existing-0755"])
def test_what_the_gateway_keeps_is_readable_by_its_user_only(tmp_path, existing):
    # The database holds every conversation and the subagent handle keys; the workspace, the files
    # people sent. Under the usual umask (022) they would be world-readable on a shared machine.
    state = tmp_path / "state"
    if existing:  # as systemd's StateDirectory= makes it by default
        state.mkdir(mode=0o755)
        state.chmod(0o755)
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    umask = os.umask(0o022)
    try:
        gateway = Running(tmp_path, "--config", str(config))
    finally:
        os.umask(umask)
    with gateway:
        gateway.started()
        modes = {p.name: p.stat().st_mode & 0o777 for p in state.iterdir()}
    assert modes["switchboard.db"] == modes["switchboard.db-wal"] == modes["switchboard.lock"] == 0o600
    assert modes["workspace"] == 0o700
    assert (state.stat().st_mode & 0o777) == (0o755 if existing else 0o700)  # an operator's own mode stays


def test_a_read_only_state_directory(tmp_path):
    state = tmp_path / "state"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    prefix: list[str] = []
    if os.geteuid() == 0:  # root writes through permission bits: only a read-only mount stops it
        prefix = on_private_tmpfs(state, "ro,size=1m") or pytest.skip("needs user and mount namespaces as root")
    else:
        state.mkdir()
        state.chmod(0o555)
    try:
        line = only_line(run(tmp_path, "run", "--config", str(config), prefix=prefix))
    finally:
        state.chmod(0o755)
    assert str(state) in line and ("read-only" in line or "not writable" in line)


def test_a_read_only_mount_holding_the_database(tmp_path, made_state):
    # A backup mounted read-only, or a volume mounted ro by mistake: the fix is the mount, not the file's mode.
    state = tmp_path / "state"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    (tmp_path / "copy.db").write_bytes((state / "switchboard.db").read_bytes())
    then = f'cp "{tmp_path / "copy.db"}" "$0/switchboard.db" && mount -o remount,ro "$0"'
    prefix = on_private_tmpfs(state, "size=4m", then=then) or pytest.skip("needs user and mount namespaces")
    line = only_line(run(tmp_path, "run", "--config", str(config), prefix=prefix))
    assert f"state directory {state} is on a read-only file system" in line


def test_a_state_directory_of_another_user(tmp_path, made_state):
    # As after a first start as root, then as the service's user: the gateway makes it 0700.
    state = tmp_path / "state"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    prefix: list[str] = []
    if os.geteuid() == 0:  # root enters any directory: run as an unprivileged user of the same files
        os.chown(state, 65534, 65534)
        prefix = ["unshare", "--map-user=1000", "--map-group=1000"]
        if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
            pytest.skip("needs user namespaces as root")
    else:
        state.chmod(0o000)
    try:
        line = only_line(run(tmp_path, "run", "--config", str(config), prefix=prefix))
    finally:
        state.chmod(0o700)
    assert f"state directory {state} cannot be entered by the gateway's user (it belongs to" in line


def test_a_state_directory_that_cannot_be_created(tmp_path):
    parent = tmp_path / "locked"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(parent / "state")})
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = on_private_tmpfs(parent, "ro,size=1m") or pytest.skip("needs user and mount namespaces as root")
    else:
        parent.mkdir()
        parent.chmod(0o555)
    try:
        line = only_line(run(tmp_path, "run", "--config", str(config), prefix=prefix))
    finally:
        parent.chmod(0o755)
    assert f"cannot create the state directory {parent / 'state'}" in line


def test_a_full_disk(tmp_path):
    state = tmp_path / "state"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    fill = 'dd if=/dev/zero of="$0/filler" bs=64k count=64 2>/dev/null; true'
    prefix = on_private_tmpfs(state, "size=512k", then=fill) or pytest.skip("needs user and mount namespaces")
    line = only_line(run(tmp_path, "run", "--config", str(config), prefix=prefix))
    assert f"state directory {state}: no space left on its disk" in line


class _EchoingTelegram(BaseHTTPRequestHandler):
    """A server that is not the Bot API: its errors quote the request path, token and all."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = ('{"ok": false, "error_code": 404, "description": "Not Found: %s"}' % self.path).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None: ...


@pytest.mark.parametrize("where", ["refused", "echoing"])
def test_a_wrong_telegram_api_base_is_one_redacted_line(tmp_path, where):
    server = None
    if where == "echoing":
        server = HTTPServer(("127.0.0.1", 0), _EchoingTelegram)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        api_base = f"http://127.0.0.1:{server.server_address[1]}"
    else:
        api_base = f"http://127.0.0.1:{free_port()}"
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"telegram": {"enabled": True, "token": "${TG_TOKEN}", "allow_all": True, "api_base": api_base}},
    })
    try:
        result = run(tmp_path, "run", "--config", str(config), env=environment(tmp_path, TG_TOKEN=TOKEN))
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    # No Telegram API there is the configuration's to mend; nothing listening may be a server not up yet.
    line = only_line(result, EXIT_CONFIG if where == "echoing" else 1)
    assert TOKEN not in result.stderr + result.stdout and "AAE-" not in result.stderr
    assert line.startswith("switchboard: platforms.telegram")
    assert "platforms.telegram.api_base" in line and api_base in line



@pytest.mark.parametrize("damage", ["not sqlite", "a directory"])
@pytest.mark.parametrize("command", [("inbox", "dead"), ("inbox", "retry", "1")])
def test_inbox_commands_on_an_unusable_database_name_it(tmp_path, config, damage, command):
    db = tmp_path / "state" / "switchboard.db"
    if damage == "a directory":
        db.mkdir(parents=True)
    else:
        db.parent.mkdir()
        db.write_bytes(b"just some text\n")
    line = only_line(run(tmp_path, *command, "--config", str(config)))
    assert line.startswith(f"switchboard: state database {db}")


async def test_a_telegram_token_refused_at_start_is_one_line_naming_it(tmp_path):
    async with FakeTelegram() as fake:  # it takes its own token only: ours is answered 401 Unauthorized
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "platforms": {"telegram": {"enabled": True, "token": "${TG_TOKEN}", "allow_all": True,
                                       "api_base": fake.base_url}},
        })
        result = await asyncio.to_thread(run, tmp_path, "run", "--config", str(config),
                                         env=environment(tmp_path, TG_TOKEN=TOKEN))
    line = only_line(result, EXIT_CONFIG)
    assert TOKEN not in result.stderr + result.stdout
    assert line.startswith("switchboard: platforms.telegram:") and "refused the bot" in line
    assert "check platforms.telegram.token" in line
