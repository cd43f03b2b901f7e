"""`is_blank` counts every character Unicode says a renderer shows as nothing (Default_Ignorable_Code_Point):
the word joiner and invisible operators were taken for text, so a model's answer of only those went out as an
empty bubble (Discord, Slack) instead of the empty-answer notice."""

from __future__ import annotations

import sys

import pytest
import regex

from agent import ToolError
from gateway.questions import checked
from gateway.splitting import split_text
from platforms.formatting.blank import caption, is_blank

INVISIBLE = ["\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\u2066\u2069", "\u00ad", "\u034f", "\u061c",
             "\u115f", "\u1160", "\u3164", "\uffa0", "\u17b4", "\u180b", "\u202a\u202c", "\ufe0f", "\U000e0100",
             "\U0001bca0", "\U0001d173", "\ufeff", "\u180e", "\u2800"]


@pytest.mark.parametrize("text", INVISIBLE)
def test_a_text_of_invisible_characters_is_blank(text) -> None:
    assert is_blank(text)
    assert is_blank(f" {text}\n{text}\u200b")
    assert caption(text) == ""
    assert split_text(text, 10) == []


def test_every_default_ignorable_code_point_is_blank() -> None:
    # regex knows the property (unicodedata does not); the project depends on it already.
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    missed = [hex(c) for c in range(sys.maxunicode + 1) if ignorable.fullmatch(chr(c)) and not is_blank(chr(c))]
    assert missed == []


@pytest.mark.parametrize("text", ["a\u2060b", "\u2764\ufe0f", "x\u00ad", "\u1100\u1161", "\u2062x", ".", "\u200b_"])
def test_text_with_anything_visible_is_not_blank(text) -> None:
    assert not is_blank(text)
    assert caption(text) == text


def test_a_question_of_word_joiners_is_refused_naming_why() -> None:
    with pytest.raises(ToolError, match="the question is only whitespace or invisible characters"):
        checked("\u2060\u2063", None)
    with pytest.raises(ToolError, match="choice 2 is only whitespace or invisible characters"):
        checked("Which?", ["staging", "\u3164"])
