"""What the terminal chat prints, and where on the screen: a message's text with its control
characters shown, never obeyed (`shown`); the rows a message takes, wrapped at the terminal's width
(`rows`, `width`, `height`), which an in-place redraw goes up over; and the line being typed at readline's
prompt, gone over before a message is printed above it (`prompt_start`) and drawn again under it,
readline's cursor where it was (`prompt_again`). The drawing itself is `platforms.local_tty`'s.
"""

from __future__ import annotations

import os
import re
from typing import Any, TextIO

from platforms.base import scalar_text
from platforms.local_tty import back_to_line_start, drawn_again, place, typed_line

_CONTROLS = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What a terminal would obey in a reply: the model's text (or a file or page it quotes) could
otherwise clear the screen, retitle the window, write the clipboard (OSC 52), hide or overwrite lines."""


def shown(text: str) -> str:
    """``text`` with its control characters made visible instead of obeyed (tabs and line breaks
    stay; CR LF is a line break): a C0 control as its Unicode control picture (ESC as ␛), DEL as ␡,
    a C1 control (8-bit CSI and the like) as U+FFFD."""
    return _CONTROLS.sub(_picture, text)


def _picture(m: re.Match[str]) -> str:
    c = m.group()
    if c == "\r\n":
        return "\n"
    if c == "\x7f":
        return "\u2421"
    return chr(0x2400 + ord(c)) if c < " " else "\ufffd"


def rows(text: str, columns: int) -> int:
    """Screen rows ``text`` takes, each line wrapped at ``columns``."""
    return sum(place(line, columns)[0] + 1 for line in text.split("\n"))


def width(output: TextIO) -> int:
    return _size(output).columns or 80


def height(output: TextIO) -> int:
    return _size(output).lines or 24


def _size(output: TextIO) -> os.terminal_size:
    try:
        return os.get_terminal_size(output.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's stream), or no terminal
        return os.terminal_size((80, 24))


def prompt_start(readline: Any, prompt: str, columns: int) -> str:
    """From readline's cursor to the start of the prompt's row."""
    before, _ = typed_line(readline, len(prompt))
    return back_to_line_start(prompt + before, columns)


def prompt_again(readline: Any, prompt: str, columns: int, *, ansi: bool) -> str:
    """The prompt and what was typed after it, drawn anew, readline's cursor where it was."""
    before, after = typed_line(readline, len(prompt))
    if not ansi:
        return scalar_text(prompt + before + after)
    return scalar_text(drawn_again(prompt + before, after, columns))
