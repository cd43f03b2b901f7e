"""The terminal adapter on a pseudo-terminal, with GNU readline, driven as a person types: its sink
(the gateway, in a chat) held for as long as a test needs, to type while no line is being read."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = """
import asyncio, os, sys
from platforms.base import Outbound
from platforms.local import LocalAdapter

async def main():
    ended = asyncio.Event()
    adapter = LocalAdapter(user="me", on_exit=ended.set)
    told, release, say = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

    async def sink(inbound):  # says what it got, then holds the chat until the test lets it go
        os.write(told, inbound.text.encode() + b"\\n")
        await asyncio.to_thread(os.read, release, 1)

    sent = []

    async def say_it(line):  # "edit ..." redraws the message sent last, as a notice's update does
        if line.startswith("edit "):
            await adapter.edit("terminal", None, sent[-1], line.removeprefix("edit "))
        else:
            sent.append((await adapter.send(Outbound("terminal", None, line, kind="notice"))).message_id)

    def reply():  # a line written to `say` is printed as the gateway's outbox would
        asyncio.ensure_future(say_it(os.read(say, 4096).decode().strip()))

    asyncio.get_running_loop().add_reader(say, reply)
    await adapter.start(sink)
    await ended.wait()
    await adapter.stop()

asyncio.run(main())
"""


class HeldTerminal:
    """The adapter on a pseudo-terminal; `got` waits for what its sink was handed, `release` lets the sink return."""

    def __init__(self, tmp_path: Path, columns: int = 80) -> None:
        self.controller, terminal = pty.openpty()
        fcntl.ioctl(self.controller, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.columns = columns
        self.at_start = termios.tcgetattr(self.controller)
        self._told, told = os.pipe()
        release, self._release = os.pipe()
        say, self._say = os.pipe()
        env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "TERM": "xterm", "INPUTRC": "/dev/null"}
        self.proc = subprocess.Popen([sys.executable, "-c", ADAPTER, str(told), str(release), str(say)],
                                     stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
                                     pass_fds=(told, release, say), start_new_session=True)
        for fd in (terminal, told, release, say):
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

    def reply(self, text: str) -> None:
        """Have the adapter print ``text`` as a message (a notice), as the gateway's outbox would; ``edit …``
        redraws the message printed last with what follows."""
        os.write(self._say, text.encode() + b"\n")

    def screen(self) -> tuple[list[str], tuple[int, int]]:
        """The terminal's rows and its cursor (row, column), as an xterm would show what was written."""
        return Screen(self.columns).feed(self.seen.decode(errors="replace"))

    def shows(self, rows: list[str], cursor: tuple[int, int], timeout: float = 20) -> None:
        """Until the screen starts with ``rows``, the cursor at ``cursor``: readline has drawn the keys typed,
        all of them (it draws one in several writes, and a message printed between two would cut in)."""
        deadline = time.monotonic() + timeout
        while (shown := self.screen()) != (rows + shown[0][len(rows):], cursor):
            ready, _, _ = select.select([self.controller], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"the screen is not {rows} with the cursor at {cursor}: {shown}"
            self.seen += os.read(self.controller, 4096)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.controller, self._told, self._release, self._say):
            os.close(fd)


class Screen:
    """As much of an xterm as readline and the adapter use: printing with wrapping (a row filled to its end
    holds the cursor on its last column until the next character), CR, LF, BS, cursor up, down, right and
    left, erase below and erase in line; mode switches (bracketed paste) change nothing shown."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[list[str]] = [[]]
        self.row = self.column = 0

    def feed(self, written: str) -> tuple[list[str], tuple[int, int]]:
        i = 0
        while i < len(written):
            if escape := re.match(r"\x1b\[(\??)(\d*)([A-Za-z@])", written[i:]):
                i += len(escape.group())
                if not escape.group(1):
                    self._escape(int(escape.group(2) or 0), escape.group(3))
                continue
            self._char(written[i])
            i += 1
        return ["".join(cells).rstrip() for cells in self.rows], (self.row, min(self.column, self.columns - 1))

    def _escape(self, count: int, command: str) -> None:
        column = min(self.column, self.columns - 1)
        if command == "A":
            self.row, self.column = max(0, self.row - max(count, 1)), column
        elif command == "B":
            self.row, self.column = self.row + max(count, 1), column
            self._grow()
        elif command in "CD":
            self.column = max(0, min(self.columns - 1, column + max(count, 1) * (1 if command == "C" else -1)))
        elif command == "J":  # erase from the cursor to the end of the screen
            del self.rows[self.row][column:]
            del self.rows[self.row + 1:]
        elif command == "K":  # erase in line: to its end (0), or all of it (2)
            self.rows[self.row] = [] if count == 2 else self.rows[self.row][:column]
        else:
            raise AssertionError(f"an escape sequence this screen does not know: {command!r}")

    def _char(self, c: str) -> None:
        if c == "\r":
            self.column = 0
        elif c == "\n":
            self.row += 1
            self.column = 0  # the terminal's onlcr: LF arrives as CR LF
            self._grow()
        elif c == "\b":
            self.column = max(0, min(self.column, self.columns - 1) - 1)
        elif c >= " ":
            if self.column >= self.columns:  # the row is full: the character goes to the next one
                self.row, self.column = self.row + 1, 0
                self._grow()
            cells = self.rows[self.row]
            cells.extend(" " * (self.column + 1 - len(cells)))
            cells[self.column] = c
            self.column += 1

    def _grow(self) -> None:
        while len(self.rows) <= self.row:
            self.rows.append([])


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


LONG = b"0123456789" * 4 + b"abcdefghij"
"""Two rows in a window 40 columns wide, after the prompt."""


def rows_of(line: str, columns: int = 40) -> list[str]:
    return [line[i:i + columns] for i in range(0, len(line), columns)]


@pytest.mark.parametrize(("keys", "line"), [
    (b"hello world" + b"\x1b[D" * 5, "hello YXworld"),
    (LONG + b"\x01\x1b[C\x1b[C", "01YX" + LONG.decode()[2:]),  # the cursor taken back to the first row
], ids=["cursor mid-line", "line on two rows"])
def test_a_reply_printed_while_a_line_is_typed_leaves_it_as_typed_and_the_cursor_where_it_was(tmp_path, keys, line):
    """The line was drawn again under the reply with the cursor at its end, wherever readline had it: the next
    key went where readline took its cursor to be (``hello worldXworld`` showed for ``hello Xworld``); and only
    the cursor's row was cleared, a line longer than the window leaving its other rows behind."""
    chat = HeldTerminal(tmp_path, columns=40)
    try:
        chat.read_until(b"you> ")
        chat.type(keys + b"Y")
        typed = line.replace("X", "")
        chat.shows(rows_of("you> " + typed), divmod(len("you> ") + typed.index("Y") + 1, 40))
        chat.reply("NEWS")
        chat.read_until(b"NEWS")
        chat.type(b"X")
        chat.read_until(b"X", after=b"NEWS")
        chat.type(b"\x05\r")  # Enter, at the end of the line: the line is what the screen shows
        assert chat.got() == line.encode()
        chat.read_until(b"\n", after=b"NEWS\r\n")  # all readline drew, to its new line after Enter
        shown, _ = chat.screen()
        rows = rows_of("you> " + line)
        assert shown[:1 + len(rows)] == ["NEWS", *rows], shown  # the prompt's rows gave way to the message
        chat.release()
        chat.type(b"\x04")
        assert chat.proc.wait(20) == 0
    finally:
        chat.close()


def test_a_notice_redrawn_while_a_long_line_is_typed_leaves_no_row_behind(tmp_path):
    """A notice's update went up from the cursor's row as if the line typed under it took one row: a line
    typed on two rows left a copy of the notice behind at each update, and the cursor at the line's end."""
    chat = HeldTerminal(tmp_path, columns=40)
    try:
        chat.read_until(b"you> ")
        chat.reply("working 1")
        chat.read_until(b"working 1")
        chat.type(LONG + b"\x01\x1b[C\x1b[CY")  # two rows; the cursor back on the first
        chat.shows(["working 1", *rows_of("you> 01Y" + LONG.decode()[2:])], (1, 8))
        for n in (2, 3):
            chat.reply(f"edit working {n}")
            chat.read_until(f"working {n}".encode())
        chat.type(b"X")
        chat.read_until(b"X", after=b"working 3")
        chat.type(b"\x05\r")
        line = "01YX" + LONG.decode()[2:]
        assert chat.got() == line.encode()
        chat.read_until(b"\n", after=b"X")
        shown, _ = chat.screen()
        assert shown[:3] == ["working 3", *rows_of("you> " + line)], shown
        chat.release()
        chat.type(b"\x04")
        assert chat.proc.wait(20) == 0
    finally:
        chat.close()


def test_a_control_character_in_the_typed_line_is_drawn_again_as_readline_shows_it_not_obeyed(tmp_path):
    """Readline shows a control character in the line (pasted, or quoted with Ctrl-V) as ``^[``; drawn
    again under a reply it went out as it was, an escape sequence the terminal obeyed (here: erase the screen)."""
    chat = HeldTerminal(tmp_path, columns=40)
    try:
        chat.read_until(b"you> ")
        chat.type(b"a\x16\x1b[2Jb")  # Ctrl-V: the next key (ESC) goes into the line as it is
        chat.shows(["you> a^[[2Jb"], (0, 12))
        chat.reply("NEWS")
        chat.read_until(b"b", after=b"NEWS")
        assert b"\x1b[2J" not in chat.seen.partition(b"NEWS")[2]
        chat.shows(["NEWS", "you> a^[[2Jb"], (1, 12))
        chat.type(b"\r")
        assert chat.got() == b"a\x1b[2Jb"
        chat.release()
        chat.type(b"\x04")
        assert chat.proc.wait(20) == 0
    finally:
        chat.close()
