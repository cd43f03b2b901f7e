"""The terminal adapter on a pseudo-terminal, with GNU readline, driven as a person types: its sink
(the gateway, in a chat) held for as long as a test needs, to type while no line is being read."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = """
import asyncio, os, sys
from platforms.local import LocalAdapter

async def main():
    ended = asyncio.Event()
    adapter = LocalAdapter(user="me", on_exit=ended.set)
    told, release = int(sys.argv[1]), int(sys.argv[2])

    async def sink(inbound):  # says what it got, then holds the chat until the test lets it go
        os.write(told, inbound.text.encode() + b"\\n")
        await asyncio.to_thread(os.read, release, 1)

    await adapter.start(sink)
    await ended.wait()
    await adapter.stop()

asyncio.run(main())
"""


class HeldTerminal:
    """The adapter on a pseudo-terminal; `got` waits for what its sink was handed, `release` lets the sink return."""

    def __init__(self, tmp_path: Path) -> None:
        self.controller, terminal = pty.openpty()
        self.at_start = termios.tcgetattr(self.controller)
        self._told, told = os.pipe()
        release, self._release = os.pipe()
        env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "TERM": "xterm", "INPUTRC": "/dev/null"}
        self.proc = subprocess.Popen([sys.executable, "-c", ADAPTER, str(told), str(release)], stdin=terminal,
                                     stdout=terminal, stderr=terminal, cwd=tmp_path, env=env, pass_fds=(told, release),
                                     start_new_session=True)
        for fd in (terminal, told, release):
            os.close(fd)
        self.seen = b""

    def read_until(self, needle: bytes, *, after: bytes = b"", timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.seen.partition(after)[2] if after else needle not in self.seen:
            ready, _, _ = select.select([self.controller], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no {needle!r} on the terminal; saw {self.seen!r}"
            chunk = b""
            with contextlib.suppress(OSError):
                chunk = os.read(self.controller, 4096)
            assert chunk, f"the adapter ended before {needle!r}; saw {self.seen!r}"
            self.seen += chunk

    def got(self, timeout: float = 20) -> bytes:
        text = b""
        while not text.endswith(b"\n"):
            assert select.select([self._told], [], [], timeout)[0], f"the sink got nothing; saw {self.seen!r}"
            chunk = os.read(self._told, 4096)
            assert chunk, f"the adapter ended; saw {self.seen!r}"
            text += chunk
        return text[:-1]

    def release(self) -> None:
        os.write(self._release, b".")

    def type(self, keys: bytes) -> None:
        os.write(self.controller, keys)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.controller, self._told, self._release):
            os.close(fd)


def test_keys_typed_while_no_line_is_read_are_shown_once(tmp_path):
    """Between two reads the terminal echoed what was typed, then readline drew it again after its
    prompt: ``world`` typed while the chat handled ``hello`` showed as ``worldyou> world``."""
    chat = HeldTerminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        chat.type(b"hello\r")
        assert chat.got() == b"hello"  # the sink holds it: no line is being read
        assert not termios.tcgetattr(chat.controller)[3] & termios.ECHO
        chat.type(b"world")
        chat.release()
        chat.read_until(b"you> world", after=b"hello")
        chat.type(b"\r")
        assert chat.got() == b"world"
        assert chat.seen.partition(b"hello")[2].count(b"world") == 1, chat.seen
        chat.release()
        chat.type(b"\x04")
        assert chat.proc.wait(20) == 0
        assert termios.tcgetattr(chat.controller) == chat.at_start  # echo and all, as it was
    finally:
        chat.close()
