"""split_text on an ATX heading whose closing sequence (the `` #`` of ``## Title #``) ends it, cut within its line:
the whole shows no ``#`` there, and no part does either (a part of only ``\\#`` showed one)."""

from __future__ import annotations

import re

import pytest

from gateway.splitting import safe_measure, split_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import telegram_html
from platforms.telegram import TelegramAdapter

_TELEGRAM = safe_measure(TelegramAdapter("123:token"))


def _shown(part: str) -> str:
    return parse_html(telegram_html.render(part))[0]


def _squeezed(text: str) -> str:
    return re.sub(r"\s", "", text)


def test_no_part_is_a_headings_closing_sequence_alone():
    # Drawn by the property in test_splitting_within_lines (3,000 examples): the last part was "\\#", shown "#".
    text = "## aaaaaaaa aaaaaaaaaa **wordwordwordwordwordwordwordwordwordword** aaaaawordwordwordword # "
    parts = split_text(text, 90, _TELEGRAM)
    assert parts == ["## aaaaaaaa aaaaaaaaaa **wordwordwordwordwordwordwordwordwordword** aaaaawordwordwordword"]


@pytest.mark.parametrize("text", [
    "## aaaaaaaa aaaaaaaaaa **" + "word" * 6 + "** aaaaawordwordwordword # ",
    "## " + "aaaa " * 14 + "###",
    "> ## " + "aaaa " * 14 + "##\n\nafter it",
    "- ## " + "aaaa " * 14 + "#\r\n- next item",
])
def test_a_heading_cut_within_its_line_shows_no_closing_sequence(text):
    # A part starting within the heading's line is no heading: the " #" it held was shown, the whole showing none.
    whole = _squeezed(_shown(text))
    for limit in range(30, 100):
        parts = split_text(text, limit, _TELEGRAM)
        assert _squeezed("".join(_shown(p) for p in parts)) == whole, (limit, parts)
