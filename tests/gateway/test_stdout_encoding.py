"""Standard output that cannot hold every character: a Latin-1 or ASCII locale (``PYTHONIOENCODING`` here, as
portable), or a UTF-8 one given bytes that are not UTF-8. Python writes stdout strictly there: one em dash,
emoji or ``…`` ended `switchboard inbox dead` and `config check` in a UnicodeEncodeError traceback."""

from __future__ import annotations

import os
import subprocess

from gateway.host import STATE_DB
from gateway.store import GatewayStore
from platforms.base import Inbound
from tests.gateway.cli_process import TIMEOUT, command, environment, write_config


def _run(tmp_path, *args: str | bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command(*args), capture_output=True, stdin=subprocess.DEVNULL, cwd=tmp_path,
                          env=environment(tmp_path, **env), timeout=TIMEOUT)


def test_inbox_dead_on_a_latin1_output_lists_the_letters_with_what_it_lacks_as_question_marks(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    store = GatewayStore(state / STATE_DB)
    try:
        store.inbox.accept(Inbound(platform="telegram", chat_id="c\u27131", thread_id=None, user_id="u1",
                                   user_name=None, text="caf\u00e9 \U0001f600 " + "x" * 80, event_id="ev-1"), "t-1")
        store.inbox.set_aside("telegram", "ev-1")
    finally:
        store.close()
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(state)})
    done = _run(tmp_path, "--config", str(config), "inbox", "dead", PYTHONIOENCODING="latin-1")
    assert done.returncode == 0, done.stderr.decode("latin-1")
    lines = done.stdout.splitlines()
    assert b"telegram chat c?1  event ev-1" in lines[0]
    assert lines[1] == b"    'caf\xe9 ? " + b"x" * 52 + b"?'"  # cut to 60 characters, its "…" a "?"


def test_config_check_on_an_ascii_output_prints_the_configuration(tmp_path):
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                "agent": {"system_prompt": "Be brief \u2014 answer \u2713"}})
    done = _run(tmp_path, "config", "check", str(config), PYTHONIOENCODING="ascii")
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")
    assert b"system_prompt: Be brief ? answer ?\n" in done.stdout


def test_chat_prints_a_state_directory_named_in_bytes_that_are_not_utf8_as_they_came(tmp_path):
    """``--set state_dir=…`` from a shell variable holding Latin-1 bytes, in a UTF-8 locale (stdout strict):
    the chat's first line, where its log goes, raised UnicodeEncodeError, after the directory was taken."""
    state = os.fsencode(tmp_path) + b"/caf\xe9"
    config = write_config(tmp_path / "c.yaml", {"logging": {"level": "ERROR"}})
    done = _run(tmp_path, "--config", str(config), "--set", b"state_dir=" + state, "chat",
                LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8:strict")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stdout.startswith(b"(logs go to " + state + b"/chat.log;")
