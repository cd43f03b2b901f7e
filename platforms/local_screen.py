"""What the terminal chat prints, and where on the screen: a message's text with its control
characters shown, never obeyed (`shown`); the rows a message takes, wrapped at the terminal's width
(`rows`, `width`, `height`), which an in-place redraw goes up over; and the line being typed at readline's
prompt, gone over before a message is printed above it (`prompt_start`) and drawn again under it,
readline's cursor where it was (`prompt_again`); and every character of it as a terminal that is not UTF-8
can show it (`printable`); and whether the terminal takes the cursor movements all that is drawn with
(`moves_cursor`). The drawing itself is `platforms.local_tty`'s.
"""

from __future__ import annotations

import codecs
import functools
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


def printable(text: str, encoding: str | None) -> str:
    """``text`` as a terminal whose encoding is ``encoding`` can take it (a Latin-1 or KOI8-R locale): a
    character the encoding lacks as ``?`` (a control picture in caret notation, ESC as ``^[``), and so is one
    it encodes as a byte from 0x80 to 0x9F, which such a terminal obeys as a C1 control (KOI8-R's ``─`` is
    0x80, cp1252's ``›`` is 0x9B, CSI). Unchanged for UTF-8 or an encoding unknown. Left to the output's
    own (strict) encoding, a reply with one curly quote raised UnicodeEncodeError and none of it was shown,
    and the greeting's ``⏳`` failed the chat's start."""
    codec = _not_utf8(encoding)
    if codec is None or text.isascii():
        return text
    return "".join(c if c < "\x80" else _in(codec, c) for c in text)


@functools.cache
def _not_utf8(encoding: str | None) -> str | None:
    """The codec's name, None for UTF-8 (it takes every character `shown` leaves) or an unknown one."""
    try:
        name = codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return None
    return None if name == "utf-8" else name


def _in(codec: str, c: str) -> str:
    try:
        encoded = c.encode(codec)
    except UnicodeError:
        encoded = b""
    # Several bytes are a multibyte encoding's character (EUC-JP, GB18030): the terminal reads them whole.
    if len(encoded) > 1 or (len(encoded) == 1 and not 0x80 <= encoded[0] <= 0x9F):
        return c
    if "\u2400" <= c <= "\u241f":
        return "^" + chr(ord(c) - 0x2400 + 0x40)  # as `shown` drew a C0 control, in readline's notation
    return "^?" if c == "\u2421" else "?"


def moves_cursor(term: str | None) -> bool:
    """Whether a terminal of type ``term`` (``$TERM``) takes the escape sequences that move its cursor and erase:
    not a dumb one (``dumb``, Emacs's ``dumb-emacs-ansi``: Emacs's shell buffer, a CI job's log), nor one
    unnamed. They showed there as garbage, ``you> ␛[1A␛[J⏳ Working``, at every update of a progress line."""
    return bool(term) and term.split("-")[0] != "dumb"


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
