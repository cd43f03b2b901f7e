"""`switchboard chat` stopped with Ctrl-Z and resumed (`fg`): its keys are its own again."""

from __future__ import annotations

import os
import select
import signal
import termios
import time

import pytest

from platforms.local import LEAVE_HINT
from tests.scenarios.test_terminal_chat import Terminal, working_terminal


def stop_and_resume(chat: Terminal) -> None:
    """Stopped, as Ctrl-Z stops it, then what a shell's ``fg`` does: the terminal back in the shell's modes (Ctrl-C
    SIGINT, line mode and echo on), then SIGCONT; returns once the chat has drawn its prompt again and has its keys
    back. SIGSTOP, not Ctrl-Z's SIGTSTP: the chat leads a session of its own here, with no shell in it, and the
    kernel stops no process group so orphaned for SIGTSTP."""
    os.kill(chat.proc.pid, signal.SIGSTOP)
    _, status = os.waitpid(chat.proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status
    termios.tcsetattr(chat.controller, termios.TCSANOW, chat.at_start)
    shown_before = chat.seen
    os.kill(chat.proc.pid, signal.SIGCONT)
    while b"you> " not in chat.seen[len(shown_before):]:
        read_more(chat)
    deadline = time.monotonic() + 20
    while termios.tcgetattr(chat.controller)[6][termios.VINTR] == chat.at_start[6][termios.VINTR]:
        assert time.monotonic() < deadline, "the chat did not take Ctrl-C back as its key"
        time.sleep(0.01)


def read_more(chat: Terminal) -> None:
    ready, _, _ = select.select([chat.controller], [], [], 20)
    assert ready, f"the chat drew nothing more; saw {chat.seen!r}"
    chunk = os.read(chat.controller, 4096)
    assert chunk, f"the chat ended; saw {chat.seen!r}"
    chat.seen += chunk


@pytest.mark.parametrize("busy", [False, True], ids=["at-the-prompt", "during-a-turn"])
def test_ctrl_c_after_ctrl_z_and_fg_is_still_a_key_of_the_chat(tmp_path, busy):
    """Resumed, the chat kept the shell's modes: Ctrl-C was SIGINT again, which ended the whole chat (mid-turn,
    waiting out the shutdown grace) instead of stopping the turn or saying how to leave, and after `fg` no
    prompt showed until a key was pressed."""
    chat = working_terminal(tmp_path, child_steps=400) if busy else Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        stop_and_resume(chat)
        os.write(chat.controller, b"\x03")
        if busy:
            chat.read_until(b"Stopped the running turn")
            chat.read_until(b"you> ", after=b"Stopped the running turn")
            os.write(chat.controller, b"\x03")  # at the idle prompt now: says how to leave
        chat.read_until(LEAVE_HINT.encode())
        os.write(chat.controller, b"\x03")
        assert chat.wait() == 0
        assert b"Traceback" not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()
