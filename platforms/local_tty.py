"""The terminal chat's terminal settings (POSIX): Ctrl-C a key of the chat, every key for readline.

`platforms.local` turns readline on (`line_editing`), takes the terminal's settings as the chat
starts (`tty_state`) and a Ctrl-D pressed while it started (`ended_in_line_mode`), hands the keys
to the chat (`keys_for_the_chat`), turns echo on for each readline read only (`set_echo`), where the terminal
echoed (`echoes`), and
gives the settings back as they were when the chat ends, however it ends (`restore_tty`).

A message printed while a line is typed goes from the start of the line's first row
(`back_to_line_start`), and the line is drawn again under it as readline drew it (`typed_line`),
the cursor back where readline has it (`drawn_again`), counting columns and rows as a terminal
does (`columns`, `place`).
"""

from __future__ import annotations

import contextlib
import functools
import locale
import os
import unicodedata
from types import ModuleType
from typing import Any, TextIO

try:
    from termios import error as _termios_error
except ImportError:  # not POSIX: no terminal settings to fail
    _termios_error = OSError
_GONE = (_termios_error, OSError, ValueError)
"""What setting a terminal raises once it is gone (hung up: its window closed, its ssh connection
dropped) or closed. ``termios.error`` is no OSError: uncaught, it ended the reader of a hung-up terminal
as a failure, where the end of its input was due."""


def line_editing() -> ModuleType | None:
    try:
        import readline  # noqa: PLC0415 - importing it is what turns line editing on for input()
    except ImportError:  # Python built without it (some minimal images): plain lines still work
        return None
    # Ctrl-C inserts itself (quoted) and ends the line: the chat decides what it means (`platforms.local.CTRL_C`).
    readline.parse_and_bind(r'"\C-c": "\C-v\C-c\C-m"')
    return readline


def tty_state(stream: TextIO) -> Any:
    try:
        import termios  # noqa: PLC0415 - POSIX only
    except ImportError:
        return None
    with contextlib.suppress(*_GONE):
        return termios.tcgetattr(stream.fileno())
    return None


def keys_for_the_chat(stream: TextIO, state: Any) -> None:
    """Turn the terminal's interrupt character (Ctrl-C) off, so that it reaches readline as a key
    instead of sending SIGINT; `LocalAdapter.stop` restores ``state``. Other signal keys (Ctrl-Z, Ctrl-\\) stay.

    The kernel's line mode (ICANON) and echo go off too: readline turns them off only while it reads,
    and the chat asks for a read only once it has handled the line before (`local_reader.Lines`), so keys pressed
    between two reads would meet them. Line mode turns a Ctrl-D into a NUL byte for the next read (lost)
    and acts on erase keys itself; echo shows the keys as they are pressed, and the read then draws them
    again after its prompt. Without them every key waits, unseen, for readline, which draws it. Readline
    draws nothing on a terminal it finds without echo, so `LocalAdapter._edit_line` turns echo on just before each
    read (readline turns it off at once, for the read) and off again after."""
    if state is None:
        return
    import termios  # noqa: PLC0415

    with contextlib.suppress(*_GONE):
        attrs = [*state[:6], list(state[6])]
        attrs[3] &= ~(termios.ICANON | termios.ECHO)
        disabled = os.fpathconf(stream.fileno(), "PC_VDISABLE")
        if disabled >= 0:  # else the terminal cannot turn a key off: Ctrl-C stays SIGINT, which leaves
            attrs[6][termios.VINTR] = bytes([disabled])
        termios.tcsetattr(stream.fileno(), termios.TCSADRAIN, attrs)


def ended_in_line_mode(stream: TextIO) -> bool:
    """Whether the terminal holds an end of input, Ctrl-D pressed at the start of a line while the kernel's
    line mode was on (the chat starting, before `keys_for_the_chat`); it is read, so taken. Left there, the
    line mode turned off makes it a NUL byte, which readline takes for a key that does nothing: the Ctrl-D
    was lost, and the chat stayed. Lines typed ahead are left for readline (and a Ctrl-D after them with them)."""
    import fcntl  # noqa: PLC0415 - POSIX only, as termios
    import select  # noqa: PLC0415
    import struct  # noqa: PLC0415
    import termios  # noqa: PLC0415

    with contextlib.suppress(*_GONE):
        fd = stream.fileno()
        if not select.select([fd], [], [], 0)[0]:
            return False
        # In line mode the count is of what lines hold, an end of input none: readable with none is an end alone.
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        return waiting == 0 and os.read(fd, 1) == b""
    return False


def waiting(stream: TextIO) -> bool:
    """Whether input waits on the terminal, unread (the rest of a paste); False where that cannot be told."""
    import select  # noqa: PLC0415

    with contextlib.suppress(*_GONE):
        return bool(select.select([stream.fileno()], [], [], 0)[0])
    return False


def echoes(state: Any) -> bool:
    """Whether a terminal in ``state`` (`tty_state`) showed the keys typed. Not Emacs's shell buffer: Emacs turns
    its subprocesses' echo off, as it shows what is typed itself and sends a line once it is entered (nor one set
    ``stty -echo``)."""
    if state is None:
        return False
    import termios  # noqa: PLC0415

    return bool(state[3] & termios.ECHO)


def set_echo(stream: TextIO, on: bool) -> None:
    import termios  # noqa: PLC0415

    with contextlib.suppress(*_GONE):
        attrs = termios.tcgetattr(stream.fileno())
        attrs[3] = attrs[3] | termios.ECHO if on else attrs[3] & ~termios.ECHO
        # At once, not after the output drains: a reply being printed to a slow terminal must not hold the read.
        termios.tcsetattr(stream.fileno(), termios.TCSANOW, attrs)


def restore_tty(stream: TextIO, state: Any) -> None:
    import termios  # noqa: PLC0415

    with contextlib.suppress(*_GONE):
        termios.tcsetattr(stream.fileno(), termios.TCSADRAIN, state)


def typed_line(readline: Any, column: int) -> tuple[str, str]:
    """What has been typed at readline's prompt, drawn as readline draws it from ``column`` on
    (`as_readline_draws`), split at readline's cursor; ("", "") without line editing (``readline`` None),
    and the cursor taken to be at the end where it cannot be read (`_point`)."""
    if readline is None:
        return "", ""
    typed = readline.get_line_buffer()
    point = _point(readline)
    if point is None:
        before = typed
    else:  # a count of bytes of the line as readline holds it, which Python's module decodes so
        encoding = locale.getencoding()
        before = typed.encode(encoding, "surrogateescape")[:max(point.value, 0)].decode(encoding, "surrogateescape")
    octal = _bytes_in_octal(readline)
    drawn = as_readline_draws(before, column, octal=octal)
    return drawn, as_readline_draws(typed[len(before):], column + columns(drawn), octal=octal)


def back_to_line_start(before: str, width: int) -> str:
    """From readline's cursor, after ``before`` (the prompt and what is typed before the cursor, as drawn),
    to the start of the first row of the line: one wider than the window wraps, and the cursor may be on any
    of its rows (moved there with the arrow keys)."""
    return "\r" + up(cursor_after(before, width)[0])


def drawn_again(before: str, after: str, width: int) -> str:
    """``before`` and ``after`` (the prompt and what is typed, as drawn, split at readline's cursor) to be
    written from the start of a row, with the cursor then taken back to where readline has it: readline draws
    the next key pressed where it takes its cursor to be (a key typed mid-line drawn at the line's end showed
    ``hello worldXworld`` for ``hello Xworld``)."""
    drawn = before + after
    end = place(drawn, width)
    if end[1] == width:  # the terminal holds the cursor on the row's last column: on to the next, as readline does
        drawn += " \r"
        end = (end[0] + 1, 0)
    row, column = cursor_after(before, width)
    if (row, column) != end:
        drawn += "\r" + up(end[0] - row) + (f"\x1b[{column}C" if column else "")
    return drawn


def cursor_after(text: str, width: int) -> tuple[int, int]:
    """Where readline has its cursor after ``text``, drawn from a row's start: (row, column), a row ``width``
    columns wide. After a character that fills its row to the end, the cursor is at the start of the next
    (readline takes it there)."""
    row, column = place(text, width)
    return (row + 1, 0) if column == width else (row, column)


def up(rows: int) -> str:
    """The cursor ``rows`` rows up (none for 0: the terminal's default count is 1)."""
    return f"\x1b[{rows}A" if rows > 0 else ""


@functools.cache
def _point(readline: Any) -> Any:
    """Readline's cursor in the line being typed, a count of bytes (GNU readline's ``rl_point``, which
    Python's module does not offer), from the library the module is linked to; None where that cannot be
    read (a line editor without it, a module not loaded from a library)."""
    try:
        import ctypes  # noqa: PLC0415 - only for a chat typed at a terminal

        return ctypes.c_int.in_dll(ctypes.CDLL(readline.__file__), "rl_point")
    except (AttributeError, OSError, TypeError, ValueError):
        return None


@functools.cache
def _bytes_in_octal(readline: Any) -> bool:
    """Whether readline shows a byte the locale cannot decode as ``\\303`` (``output-meta`` off, its default in
    the C locale: ``LC_ALL=C``, which Python's UTF-8 mode reads UTF-8 under all the same). False where that
    cannot be read, as `_point`."""
    try:
        import ctypes  # noqa: PLC0415 - only for a chat typed at a terminal

        value = ctypes.CDLL(readline.__file__).rl_variable_value
        value.restype, value.argtypes = ctypes.c_char_p, [ctypes.c_char_p]
        return value(b"output-meta") == b"off"
    except (AttributeError, OSError, TypeError, ValueError):
        return False


def as_readline_draws(text: str, column: int, *, octal: bool = False) -> str:
    """``text``, typed at readline's prompt from ``column`` on, as readline draws it: a control character in
    caret notation (ESC as ``^[``, DEL as ``^?``), a tab as spaces to the next multiple of eight columns, and
    with ``octal`` (`_bytes_in_octal`) a byte the locale cannot decode (a lone surrogate, as Python's module
    hands it over) as a backslash and three octal digits. Drawn so again it takes the columns readline counts
    it to take, and a control character pasted into the line is shown, not obeyed, as readline shows it: a
    ``héllo`` typed under ``LC_ALL=C``, shown ``h\\303\\251llo``, was drawn again ``h��llo``, six columns short,
    and the keys typed next landed where readline did not have them."""
    drawn = []
    for c in text:
        if c == "\t":
            piece = " " * (8 - column % 8)
        elif octal and "\udc80" <= c <= "\udcff":
            piece = f"\\{ord(c) - 0xDC00:03o}"
        elif c < " " or c == "\x7f":
            piece = "^" + chr(ord(c) ^ 0x40)
        elif "\x80" <= c <= "\x9f":  # an 8-bit control (CSI...): a terminal may obey it too
            piece = "\ufffd"
        else:
            piece = c
        drawn.append(piece)
        column += columns(piece)
    return "".join(drawn)


def place(text: str, width: int) -> tuple[int, int]:
    """The row and column a terminal ``width`` columns wide has its cursor at once ``text`` (one line) is
    written from a row's start: a wide character that does not fit in what is left of a row goes whole to the
    next. After a character that fills its row the column is ``width``: the cursor stays on the row's last
    column, and the next character written goes to the next row."""
    row = column = 0
    for c in text:
        taken = columns(c)
        if column + taken > width:
            row, column = row + 1, 0
        column += taken
    return row, column


def columns(line: str) -> int:
    """Terminal columns ``line`` takes: East Asian wide characters (CJK, most emoji) two, combining
    marks and format characters (a zero-width joiner) none."""
    return sum(0 if unicodedata.category(c) in ("Mn", "Me", "Cf") else 2 if unicodedata.east_asian_width(c) in "WF"
               else 1 for c in line)
