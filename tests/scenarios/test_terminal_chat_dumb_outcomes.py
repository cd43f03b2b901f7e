"""`switchboard chat` on a dumb terminal (``TERM=dumb``: Emacs's shell buffer; or none named): a progress line
stays as first printed, and how its turn ended is printed under it, once (the chat cannot redraw it there)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import termios

import pytest
import yaml

from tests.scenarios.test_terminal_chat_dumb_terminal import CONTROLLING, ROOT, DumbTerminal

STOPPED_FOR_NEXT = "⏹ Stopped for your next message".encode()
DONE = "✓ Done in".encode()


class ScriptedDumbTerminal(DumbTerminal):
    """The real chat on a pseudo-terminal named ``term`` (`DumbTerminal`), its model scripted, a notice every 0.1 s."""

    def __init__(self, tmp_path, term: str | None, script: list) -> None:  # not the parent's: it runs the demo model
        (tmp_path / "script.yaml").write_text(yaml.safe_dump({"parent": script}))
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"),
            "model": {"provider": "scripted", "script": str(tmp_path / "script.yaml")},
            "agent": {"gateway_notify_interval": 0.1},
        }))
        env = {k: v for k, v in os.environ.items() if k != "TERM"}
        env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT), INPUTRC="/dev/null", **({"TERM": term} if term else {}))
        self.controller, terminal = pty.openpty()
        self.at_start = termios.tcgetattr(self.controller)
        self.proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, "--config", str(config), "chat"],
                                     stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
                                     start_new_session=True)
        os.close(terminal)
        self.seen = b""


@pytest.mark.parametrize("term", ["dumb", None], ids=["dumb", "unset"])
def test_a_turn_the_next_line_stops_says_so_on_a_dumb_terminal(tmp_path, term):
    """Its notice showed, so the chat counted on it to come to read ``⏹ Stopped for your next message``; but a dumb
    terminal keeps a notice as first printed: the screen showed ``⏳ Working…``, then the next line's answer."""
    chat = ScriptedDumbTerminal(tmp_path, term, [
        [{"tool_calls": [{"name": "write_file", "arguments": {"path": "started.txt", "content": "x"}}]},
         {"hang": True}],
        [{"text": "the answer to the next line"}],
    ])
    try:
        chat.read_until(b"you> ")
        chat.type(b"a long task\r")
        chat.read_until(b"you> ", after=b"Working")
        chat.type(b"something else\r")
        chat.read_until(b"you> ", after=b"the answer to the next line")
        chat.type(b"\x04")
        assert chat.wait() == 0
        assert chat.seen.count(STOPPED_FOR_NEXT) == 1, chat.seen.decode(errors="replace")
        assert b"\x1b" not in chat.seen
    finally:
        chat.close()


def test_a_turn_that_ends_says_how_under_its_progress_line_on_a_dumb_terminal(tmp_path):
    chat = ScriptedDumbTerminal(tmp_path, "dumb", [
        [{"sleep": 0.3, "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
         {"text": "all written"}],
    ])
    try:
        chat.read_until(b"you> ")
        chat.type(b"write it\r")
        chat.read_until(b"all written", after=b"Working")
        chat.read_until(b"you> ", after=DONE)
        chat.type(b"\x04")
        assert chat.wait() == 0
        assert chat.seen.count(DONE) == 1, chat.seen.decode(errors="replace")
        assert b"\x1b" not in chat.seen
    finally:
        chat.close()
