"""`switchboard chat` sent SIGINT, not the Ctrl-C key: Emacs's shell buffer (``C-c C-c``), ``kill -INT``, an IDE's
stop button, the Ctrl-C of a pipeline that feeds it (`platforms.local_interrupts`)."""

from __future__ import annotations

import os
import signal
import subprocess
import termios
import time

from tests.scenarios.test_terminal_chat import GONE_WITHIN, Terminal, chat_on_pipes, working_terminal


def test_sigint_during_a_turn_stops_it_like_ctrl_c_and_at_the_idle_prompt_leaves(tmp_path):
    """A SIGINT ended the whole chat, silent for the running turn's shutdown grace (here a minute), instead of
    stopping the turn as the Ctrl-C key does; what was typed is kept, as the signal pressed no key."""
    chat = working_terminal(tmp_path, child_steps=400)
    try:
        os.write(chat.controller, b"half")
        chat.read_until(b"half")
        os.kill(chat.proc.pid, signal.SIGINT)
        chat.read_until(b"Stopped the running turn")
        os.write(chat.controller, b" typed\r")
        chat.read_until(b"you> ", after=b"[demo] I am")
        assert b"you> half typed" in chat.seen.partition(b"Stopped the running turn")[2]
        os.kill(chat.proc.pid, signal.SIGINT)  # nothing running: leaves, as many REPLs do
        assert chat.wait() == 0
        assert b"Traceback" not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()


def test_sigterm_during_a_turn_still_stops_the_gateway(tmp_path):
    """SIGTERM is the supervisor's stop, not a Ctrl-C: the chat ends, the turn given the shutdown grace."""
    chat = Terminal(tmp_path, model={"demo": {"child_steps": 400, "step_seconds": 0.5}},
                    delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2},
                    server={"shutdown_grace_seconds": 0.5})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"Compare these:\r- apples\r- pears\r")
        chat.read_until(b"Working")
        os.kill(chat.proc.pid, signal.SIGTERM)
        assert chat.wait() == 0
        assert b"Stopped the running turn" not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()


def test_sigint_to_a_chat_fed_by_a_pipe_stops_the_turn_and_ends_at_once(tmp_path):
    """``yes | switchboard chat``, then Ctrl-C: the whole pipeline gets SIGINT, which means quit. The chat sat out
    the running turn's shutdown grace (here two minutes) before it ended."""
    chat = chat_on_pipes(tmp_path, model={"demo": {"child_steps": 400, "step_seconds": 0.5}},
                         delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2},
                         server={"shutdown_grace_seconds": 120})
    try:
        chat.stdin.write(b"Compare these:\n- apples\n- pears\n")
        chat.stdin.flush()
        while b"Working" not in (line := chat.stdout.readline()):
            assert line, "the chat ended before its turn showed it was working"
        os.kill(chat.pid, signal.SIGINT)
        began = time.monotonic()
        shown, errors = chat.communicate(timeout=GONE_WITHIN)
        assert chat.returncode == 0, errors
        assert time.monotonic() - began < GONE_WITHIN
        assert b"Stopped the running turn" in shown, shown
        assert b"Traceback" not in errors, errors
    except subprocess.TimeoutExpired:
        raise AssertionError("the chat sat out the turn's shutdown grace") from None
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.communicate()
