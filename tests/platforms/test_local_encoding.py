"""The terminal chat on a terminal that is not UTF-8 (`platforms.local_screen.printable`).

A Latin-1 (or ASCII, or KOI8-R) locale gives ``sys.stdout`` that encoding, with strict errors: a reply with
one curly quote, an emoji, or a control character shown as its picture (ESC as ␛) raised UnicodeEncodeError
from `LocalAdapter.send`, and nothing of it was printed; the greeting's ⏳ did the same at the chat's start.
"""

from __future__ import annotations

import io

import pytest

from platforms.base import Outbound
from platforms.local import LocalAdapter


class Terminal(io.TextIOWrapper):
    """A terminal's output in ``encoding``, strict as ``sys.stdout`` is in such a locale."""

    def __init__(self, encoding: str) -> None:
        self.raw_bytes = io.BytesIO()
        super().__init__(self.raw_bytes, encoding=encoding, write_through=True)

    def isatty(self) -> bool:
        return True

    def printed(self) -> bytes:
        self.flush()
        return self.raw_bytes.getvalue()


async def test_a_reply_a_latin_1_terminal_cannot_encode_is_printed_with_question_marks():
    out = Terminal("latin-1")
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "café \u201cdone\u201d 📎 a\x1b[2Jb", kind="reply"))
    # é is Latin-1's own; the quotes and the emoji are not; the escape is shown, in caret notation.
    assert out.printed() == "agent> café ?done? ? a^[[2Jb\n".encode("latin-1")


async def test_the_greeting_is_printed_on_an_ascii_terminal():
    out = Terminal("ascii")
    adapter = LocalAdapter(input=io.StringIO(""), output=out, greeting="Switchboard — ⏳ notices on")
    adapter.greet()
    assert out.printed() == b"Switchboard ? ? notices on\n"


@pytest.mark.parametrize(("encoding", "character"), [("koi8-r", "─"), ("cp1252", "›")])
async def test_a_character_an_8_bit_terminal_would_take_for_a_c1_control_is_not_printed(encoding, character):
    """KOI8-R's ─ is the byte 0x80, cp1252's › is 0x9B: CSI, to a terminal that obeys 8-bit controls."""
    out = Terminal(encoding)
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, f"a{character}31mb", kind="reply"))
    assert out.printed() == b"agent> a?31mb\n"


async def test_a_redraw_goes_up_over_the_rows_the_message_took_as_printed():
    """50 wide characters take 100 columns, two rows at 80; printed as 50 ``?`` they take one. Counted as
    written, the redraw went up two rows, over the line above, which it erased."""
    out = Terminal("latin-1")
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "the answer above", kind="reply"))
    sent = await adapter.send(Outbound("terminal", None, "検" * 50, kind="notice"))
    before = len(out.printed())
    await adapter.edit("terminal", None, sent.message_id, "done")
    assert out.printed()[before:] == b"\r\x1b[1A\x1b[Jdone\n"
