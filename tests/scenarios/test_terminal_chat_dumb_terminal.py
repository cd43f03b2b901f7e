"""`switchboard chat` on a dumb terminal (``TERM=dumb``, Emacs's shell buffer; or none named, a CI job's log),
which shows the escape sequences that move a cursor as garbage: the chat sends it none, and works as elsewhere."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONTROLLING = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
               "os.execv(sys.executable, [sys.executable, '-m', 'gateway.cli', *sys.argv[1:]])")
"""Runs the chat with its terminal as the controlling one, as a shell does."""


class DumbTerminal:
    def __init__(self, tmp_path: Path, term: str | None) -> None:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"),
            "model": {"demo": {"child_steps": 40, "step_seconds": 0.5}},  # a turn that runs until Ctrl-C
            "delegation": {"gateway_mode": "inline"},
            "agent": {"gateway_notify_interval": 0.1},  # a progress line, updated as the turn runs
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

    def read_until(self, needle: bytes, *, after: bytes | None = None, since: int = 0, timeout: float = 20) -> None:
        """Until ``needle`` is on screen past the first ``after`` (when given) and its first ``since`` bytes."""
        deadline = time.monotonic() + timeout
        while needle not in (self.seen[since:] if after is None else self.seen[since:].partition(after)[2]):
            ready, _, _ = select.select([self.controller], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no {needle!r} on the terminal; saw {self.seen!r}"
            chunk = b""
            with contextlib.suppress(OSError):  # EIO: the chat has ended
                chunk = os.read(self.controller, 4096)
            assert chunk, f"the chat ended before {needle!r}; saw {self.seen!r}"
            self.seen += chunk

    def type(self, keys: bytes) -> None:
        os.write(self.controller, keys)

    def wait(self, timeout: float = 20) -> int:
        status = self.proc.wait(timeout)
        with contextlib.suppress(OSError):
            while select.select([self.controller], [], [], 0)[0] and (chunk := os.read(self.controller, 4096)):
                self.seen += chunk
        return status

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.controller)


@pytest.mark.parametrize("term", ["dumb", None], ids=["dumb", "unset"])
def test_a_dumb_terminal_gets_no_escape_sequences_and_its_keys_still_work(tmp_path, term):
    """The progress line came as ``you> ␛[J⏳ Working…``, then ``␛[1A␛[J⏳ Working…`` at each update, and a
    reply the same: garbage on every line there. Readline's line editing, Ctrl-C and Ctrl-D work as elsewhere."""
    chat = DumbTerminal(tmp_path, term)
    try:
        chat.read_until(b"you> ")
        chat.type(b"Compare thes\x7fe these:\r- apples\r- pears\r")  # a key erased on the way
        chat.read_until(b"Working")
        chat.read_until(b"you> ", after=b"Working")  # the prompt under the progress line, for the next message
        chat.type(b"\x03")  # stops the turn, as /stop: a key here too, not SIGINT
        chat.read_until(b"Stopped the running turn")
        chat.read_until(b"you> ", after=b"Stopped the running turn")
        shown = len(chat.seen)
        chat.proc.send_signal(signal.SIGCONT)  # as `fg` after Ctrl-Z: the prompt is drawn again
        chat.read_until(b"you> ", since=shown)
        chat.type(b"hello\r")
        chat.read_until(b"you> ", after=b"[demo] I am")
        chat.type(b"\x04")
        assert chat.wait() == 0
        assert b"\x1b" not in chat.seen, chat.seen.decode(errors="replace")
        assert b"Traceback" not in chat.seen
        assert b"Compare these:" in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()
