"""A burst of SIGINTs while `switchboard chat` leaves (a held Ctrl-C key where it is no key of the chat, an IDE sending
several): the first leaves and each one after it may end the process at once, with status 0 or 130 as documented,
never with a traceback, killed by the signal (-2), or its terminal left in the chat's settings."""

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

from tests.scenarios.test_terminal_chat import GONE_WITHIN, ROOT, chat_on_pipes

SWITCHBOARD = Path(sys.executable).with_name("switchboard")
"""The command as installed (`gateway.entry`), which ends the process as a user's does."""
CONTROLLING = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
               "os.execv(sys.argv[1], sys.argv[1:])")
BURST_SECONDS, EVERY = 1.0, 0.005
ENDED = (0, 130)
"""Left (0), or ended at once by a SIGINT that came while the gateway stopped (130)."""
TOLD = (b"Traceback", b"Exception ignored", b"KeyboardInterrupt")


def burst(proc: subprocess.Popen, read: int) -> bytes:
    """SIGINT every `EVERY` seconds for up to `BURST_SECONDS`, until the process has ended; what ``read`` had."""
    seen = b""
    ends = time.monotonic() + BURST_SECONDS
    while time.monotonic() < ends and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGINT)
        time.sleep(EVERY)
        seen += drained(read)
    return seen


def drained(read: int) -> bytes:
    seen = b""
    while select.select([read], [], [], 0)[0]:
        try:
            chunk = os.read(read, 4096)
        except OSError:  # EIO: the chat has ended and closed its terminal
            break
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.timeout(2 * GONE_WITHIN)
def test_a_burst_of_sigints_at_the_prompt_ends_the_chat_quietly_and_gives_the_terminal_back(tmp_path):
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state")}))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "TERM": "xterm", "INPUTRC": "/dev/null"}
    controller, terminal = pty.openpty()
    at_start = termios.tcgetattr(controller)
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, str(SWITCHBOARD), "--config", str(config), "chat"],
                            stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
                            start_new_session=True)
    os.close(terminal)
    try:
        seen = b""
        deadline = time.monotonic() + GONE_WITHIN
        while b"you> " not in seen:
            assert select.select([controller], [], [], max(0.0, deadline - time.monotonic()))[0], seen
            seen += drained(controller)
            assert proc.poll() is None, seen
        seen += burst(proc, controller)
        status = proc.wait(GONE_WITHIN)
        seen += drained(controller)
        assert status in ENDED, seen
        assert not any(told in seen for told in TOLD), seen
        assert termios.tcgetattr(controller) == at_start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    next_start = subprocess.run([str(SWITCHBOARD), "--config", str(config), "chat"], input=b"hello\n",
                                capture_output=True, timeout=GONE_WITHIN, cwd=tmp_path, env=env)
    assert next_start.returncode == 0, next_start.stderr
    assert b"offline demo model" in next_start.stdout
    assert not any(told in next_start.stdout + next_start.stderr for told in TOLD), next_start.stderr


@pytest.mark.timeout(2 * GONE_WITHIN)
def test_a_burst_of_sigints_to_a_piped_chat_during_a_turn_ends_it_quietly(tmp_path):
    chat = chat_on_pipes(tmp_path, model={"demo": {"child_steps": 400, "step_seconds": 0.5}},
                         delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2},
                         server={"shutdown_grace_seconds": 120})
    try:
        chat.stdin.write(b"Compare these:\n- apples\n- pears\n")
        chat.stdin.flush()
        while b"Working" not in (line := chat.stdout.readline()):
            assert line, "the chat ended before its turn showed it was working"
        meanwhile = burst(chat, chat.stdout.fileno())
        shown, errors = chat.communicate(timeout=GONE_WITHIN)
        assert chat.returncode in ENDED, errors
        assert not any(told in meanwhile + shown + errors for told in TOLD), errors
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.communicate()
