"""The terminal chat's terminal settings (POSIX): Ctrl-C a key of the chat, every key for readline.

`platforms.local` turns readline on (`line_editing`), takes the terminal's settings as the chat
starts (`tty_state`), hands the keys to the chat (`keys_for_the_chat`), turns echo on for each
readline read only (`set_echo`), and gives the settings back as they were when the chat ends,
however it ends (`restore_tty`).
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType
from typing import Any, TextIO


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

        return termios.tcgetattr(stream.fileno())
    except (ImportError, OSError, ValueError):
        return None


def keys_for_the_chat(stream: TextIO, state: Any) -> None:
    """Turn the terminal's interrupt character (Ctrl-C) off, so that it reaches readline as a key
    instead of sending SIGINT; `LocalAdapter.stop` restores ``state``. Other signal keys (Ctrl-Z, Ctrl-\\) stay.

    The kernel's line mode (ICANON) and echo go off too: readline turns them off only while it reads,
    and the chat asks for a read only once it has handled the line before (`LocalAdapter._line`), so keys pressed
    between two reads would meet them. Line mode turns a Ctrl-D into a NUL byte for the next read (lost)
    and acts on erase keys itself; echo shows the keys as they are pressed, and the read then draws them
    again after its prompt. Without them every key waits, unseen, for readline, which draws it. Readline
    draws nothing on a terminal it finds without echo, so `LocalAdapter._edit_line` turns echo on just before each
    read (readline turns it off at once, for the read) and off again after."""
    if state is None:
        return
    import termios  # noqa: PLC0415

    with contextlib.suppress(OSError, ValueError):
        attrs = [*state[:6], list(state[6])]
        attrs[3] &= ~(termios.ICANON | termios.ECHO)
        disabled = os.fpathconf(stream.fileno(), "PC_VDISABLE")
        if disabled >= 0:  # else the terminal cannot turn a key off: Ctrl-C stays SIGINT, which leaves
            attrs[6][termios.VINTR] = bytes([disabled])
        termios.tcsetattr(stream.fileno(), termios.TCSADRAIN, attrs)


def set_echo(stream: TextIO, on: bool) -> None:
    import termios  # noqa: PLC0415

    with contextlib.suppress(OSError, ValueError):
        attrs = termios.tcgetattr(stream.fileno())
        attrs[3] = attrs[3] | termios.ECHO if on else attrs[3] & ~termios.ECHO
        # At once, not after the output drains: a reply being printed to a slow terminal must not hold the read.
        termios.tcsetattr(stream.fileno(), termios.TCSANOW, attrs)


def restore_tty(stream: TextIO, state: Any) -> None:
    import termios  # noqa: PLC0415

    with contextlib.suppress(OSError, ValueError):
        termios.tcsetattr(stream.fileno(), termios.TCSADRAIN, state)
