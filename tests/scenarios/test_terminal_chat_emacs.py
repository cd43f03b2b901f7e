"""`switchboard chat` in Emacs's shell buffer (``M-x shell``): a dumb terminal whose echo Emacs turns off, as it
shows what is typed in its buffer itself, and sends a line only once it is entered."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import termios

import yaml

from tests.scenarios.test_terminal_chat_dumb_terminal import CONTROLLING, ROOT, DumbTerminal


class EmacsShellBuffer(DumbTerminal):
    def __init__(self, tmp_path) -> None:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state")}))
        env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "INPUTRC": "/dev/null", "TERM": "dumb"}
        self.controller, terminal = pty.openpty()
        attrs = termios.tcgetattr(terminal)
        attrs[3] &= ~termios.ECHO  # as Emacs's child_setup_tty sets up a subprocess's terminal
        attrs[1] &= ~termios.ONLCR
        termios.tcsetattr(terminal, termios.TCSANOW, attrs)
        self.at_start = termios.tcgetattr(self.controller)
        self.proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, "--config", str(config), "chat"],
                                     stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
                                     start_new_session=True)
        os.close(terminal)
        self.seen = b""


def test_a_line_typed_in_emacss_shell_buffer_shows_once(tmp_path):
    """Emacs shows the line as it is typed; the chat turned the terminal's echo on for readline, which drew the
    line again as it arrived: every line typed showed twice in the buffer."""
    chat = EmacsShellBuffer(tmp_path)
    try:
        chat.read_until(b"you> ")
        chat.type(b"hello\n")
        chat.read_until(b"you> ", after=b"[demo] I am")
        chat.type(b"\x04")
        assert chat.wait() == 0
        after_greeting = chat.seen.partition(b"docs/platforms/).")[2]  # whose examples name `hello`
        assert b"hello" not in after_greeting, after_greeting  # in the buffer once, as Emacs drew it
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()
