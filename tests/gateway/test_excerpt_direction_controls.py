"""Direction controls in what the gateway quotes or cuts for one line of a status message (`gateway.excerpt`): a word
named back (`typed`), the late note's quote (`literal`), a progress card's line, an ``/agents`` summary (`shorten`,
`excerpt`). A right-to-left override in a file name, ``invoice\\u202egpj.exe``, showed as ``invoiceexe.jpg``, and an
isolate turned words round (Trojan Source): the line shows its characters in the order they were written."""

from __future__ import annotations

import pytest

from gateway.excerpt import excerpt, literal, shorten, typed
from gateway.late_notes import picked_up_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html

CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize("control", CONTROLS)
def test_a_quoted_name_holds_no_direction_control(control: str) -> None:
    assert literal(f"invoice{control}gpj.exe") == "invoicegpj.exe"
    assert typed(f"invoice{control}gpj.exe") == "'invoicegpj.exe'"
    assert shorten(f"✓ read invoice{control}gpj.exe", 60) == "✓ read invoicegpj.exe"
    assert excerpt(f"Summary:\n{control}invoice gpj.exe", 60) == "Summary: invoice gpj.exe"


def test_a_late_notes_quote_shows_as_written_on_every_platform() -> None:
    md = picked_up_text(120, "please open \u2067exe.gpj\u2069 \u202etxt.invoice")
    shown = "⏱ Answering your message from 2 min ago: “please open exe.gpj txt.invoice”"
    assert md == shown
    text, _ = parse_html(telegram_html.render(md))
    assert text == shown
    assert slack_mrkdwn.render(md) == shown
    assert discord_markdown.render(md) == shown


def test_a_long_line_is_cut_after_its_controls_are_gone() -> None:
    # Each control took a character of the limit, and the cut fell within what is shown.
    assert shorten("\u202e" * 30 + "abcdefghij", 10) == "abcdefghij"
