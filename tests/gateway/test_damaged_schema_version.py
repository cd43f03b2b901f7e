"""A gateway schema version in ``gateway_meta`` that is no number (a hand edit, a damaged write) is a damaged
database: every open, the start's and `switchboard inbox`'s, is refused with one line naming the file and the key,
never the value, exit status 78 as for a newer version's database. It failed with Python's ValueError (or SQLite's
decode error), quoting the value: a traceback, or status 1, which the systemd unit restarts into the same failure."""

from __future__ import annotations

import sqlite3

import pytest

from agent.testing import FakeClock
from gateway.cli import EXIT_CONFIG
from gateway.store import GatewayStore, StoreError
from tests.gateway.cli_process import problem_lines, run, write_config

SECRET = "sk-live-in-the-damaged-version"
VALUES = [f"ten {SECRET}", SECRET.encode() + b" \xff", "", "10.5.1"]


def damaged(path, value: str | bytes) -> bytes:
    """A database at ``path`` whose schema version is ``value``, as a hand edit would leave it; its bytes."""
    GatewayStore(path, clock=FakeClock()).close()
    conn = sqlite3.connect(path)
    cast = "CAST(? AS TEXT)" if isinstance(value, bytes) else "?"
    conn.execute(f"UPDATE gateway_meta SET value={cast} WHERE key='schema_version'", (value,))
    conn.commit()
    conn.close()  # the last connection: checkpointed into the file, no -wal left
    return path.read_bytes()


@pytest.mark.parametrize("value", VALUES)
def test_opening_the_store_names_the_file_and_the_key(tmp_path, value) -> None:
    db = tmp_path / "state.db"
    before = damaged(db, value)
    with pytest.raises(StoreError) as raised:
        GatewayStore(db, clock=FakeClock())
    assert str(raised.value).startswith(f"state database {db} is damaged: gateway_meta's schema_version"), raised.value
    assert SECRET not in str(raised.value) and raised.value.__context__ is None
    assert db.read_bytes() == before


@pytest.mark.parametrize("command", [("run",), ("inbox", "dead"), ("inbox", "retry", "1")])
@pytest.mark.parametrize("value", VALUES[:2])
def test_every_command_is_refused_with_one_line_and_status_78(tmp_path, command, value) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = state / "switchboard.db"
    before = damaged(db, value)
    config = write_config(tmp_path / "switchboard.yaml", {"state_dir": str(state), "server": {"port": 0}})
    result = run(tmp_path, *command, "--config", str(config))
    assert result.returncode == EXIT_CONFIG, result.stderr
    assert SECRET not in result.stderr + result.stdout and "Traceback" not in result.stderr
    (line,) = problem_lines(result.stderr)
    assert line.startswith(f"switchboard: state database {db} is damaged: gateway_meta's schema_version"), line
    assert db.read_bytes() == before
