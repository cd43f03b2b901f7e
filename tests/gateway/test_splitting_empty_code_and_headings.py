"""split_text at what shows nothing: no part holds only an empty code block (its fences would be shown as typed),
and no part ends a heading with a word of "#" (read as the heading's closing sequence, it would be lost)."""

from __future__ import annotations

import re

import pytest

from gateway.splitting import safe_measure, split_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import telegram_html
from platforms.telegram import TelegramAdapter

_TELEGRAM = safe_measure(TelegramAdapter("123:token"))


def _shown(markdown: str) -> str:
    return parse_html(telegram_html.render(markdown))[0]


def _squeezed(text: str) -> str:
    return re.sub(r"\s", "", text)


@pytest.mark.parametrize("text, limit, measure", [
    # Drawn by the property in test_splitting_within_lines: the last part was the reply's closing empty block.
    ("aaaaaaa aaaaaaaaaa aaaaaaaaaa **a** **aaaaaa** **aaaaaaaa**\n\n```py\n```\n\naaaaaaaa\n\n```py\n```", 90,
     _TELEGRAM),
    ("```py\n```\n\n" + "a" * 200, 40, len),  # one before a word longer than a part
    ("word " * 20 + "\n\n~~~\n\n~~~", 24, len),  # blank lines in it
    ("> ```py\n> " + "code " * 20 + "\n> \n> ```", 26, len),  # the rest of a quote's code block blank
])
def test_no_part_holds_only_an_empty_code_block(text, limit, measure):
    # Rendered, such a part showed nothing, and was sent as written: "```py\n```" in a message of its own.
    parts = split_text(text, limit, measure)
    shown = [_shown(p) for p in parts]
    assert not any("```" in s or "~~~" in s for s in shown), parts
    assert _squeezed("".join(shown)) == _squeezed(_shown(text))


@pytest.mark.parametrize("text", [
    "## " + "aaaa " * 14 + "# word",
    "x " * 30 + "\n\n## " + "aaaa " * 14 + "# word",
    "> - ## " + "aaaa " * 14 + "## word",
])
def test_a_heading_is_not_cut_right_after_a_word_of_hashes(text):
    # Cut after " #", the part ended its heading with it: CommonMark's closing sequence, dropped; "C #" became "C".
    for limit in range(40, 90):
        parts = split_text(text, limit, _TELEGRAM)
        assert _squeezed("".join(_shown(p) for p in parts)) == _squeezed(_shown(text)), (limit, parts)


def test_a_heading_closed_by_its_own_hashes_is_cut_after_them():
    parts = split_text("## Title #\n\n" + "word " * 8, 30)
    assert parts == ["## Title #\n\nword word word", "word word word word word"]
