"""`switchboard chat` on a terminal: a pasted log is drawn once, under one ``you> ``, not a prompt per line; and
with its output redirected to a file (``switchboard chat > out.txt``), the prompt shows on the terminal, never in
the file."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import sys
import time

import yaml

from tests.scenarios.test_terminal_chat import CONTROLLING, ROOT


def _read_until(controller: int, seen: bytearray, needle: bytes, *, after: int = 0, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while needle not in seen[after:]:
        ready, _, _ = select.select([controller], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no {needle!r} on the terminal; saw {bytes(seen)!r}"
        chunk = b""
        with contextlib.suppress(OSError):  # EIO: the chat has ended
            chunk = os.read(controller, 65536)
        assert chunk, f"the chat ended before {needle!r}; saw {bytes(seen)!r}"
        seen += chunk


def _chat(tmp_path, *, stdout=None):
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state"), "model": {"demo": {}}}))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "TERM": "xterm", "INPUTRC": "/dev/null"}
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, "--config", str(config), "chat"], stdin=terminal,
                            stdout=terminal if stdout is None else stdout, stderr=terminal, cwd=tmp_path, env=env,
                            start_new_session=True)
    os.close(terminal)
    return proc, controller


def _end(proc, controller) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    os.close(controller)


def test_a_pasted_log_shows_one_prompt_not_one_per_line(tmp_path):
    proc, controller = _chat(tmp_path)
    seen = bytearray()
    try:
        _read_until(controller, seen, b"you> ")
        pasted_at = len(seen)
        log = b"".join(b"log line %d\r" % n for n in range(150))  # under the pty's 4 KiB input buffer: one write
        os.write(controller, log)
        _read_until(controller, seen, b"agent> ", after=pasted_at)
        _read_until(controller, seen, b"you> ", after=seen.index(b"agent> ", pasted_at))
        drawn = bytes(seen[pasted_at:seen.index(b"agent> ", pasted_at)])
        assert drawn.count(b"log line 149") == 1, drawn
        # The paste's first line goes after the prompt already shown; the one prompt under it is the next read's,
        # which the answer is printed over.
        assert b"you> log line" not in drawn and drawn.count(b"you> ") <= 1, drawn
        os.write(controller, b"\x04")
        assert proc.wait(30) == 0
    finally:
        _end(proc, controller)


def test_with_the_output_in_a_file_the_prompt_is_on_the_terminal(tmp_path):
    out = tmp_path / "out.txt"
    with out.open("wb") as file:
        proc, controller = _chat(tmp_path, stdout=file)
    seen = bytearray()
    try:
        _read_until(controller, seen, b"you> ")
        os.write(controller, b"hello\n")
        deadline = time.monotonic() + 30
        while b"agent> " not in out.read_bytes():
            assert time.monotonic() < deadline, out.read_bytes()
            time.sleep(0.02)
        _read_until(controller, seen, b"hello")  # the terminal's own echo
        _read_until(controller, seen, b"you> ", after=seen.index(b"hello"))  # the next prompt, after the answer
        os.write(controller, b"\x04")
        assert proc.wait(30) == 0
    finally:
        _end(proc, controller)
    written = out.read_bytes()
    assert b"you> " not in written, written
    assert b"agent> " in written and b"Switchboard terminal chat" in written, written
