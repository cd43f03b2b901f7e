"""split_text: limits by the platform's measure, readable cut points, code fences, round trips."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length

FENCE_LINE = re.compile(r"^ {0,3}`{3,}[^`\n]*$", re.MULTILINE)


def content(text: str) -> str:
    """What a reader gets: no fence lines (added or original), no whitespace."""
    return re.sub(r"\s+", "", FENCE_LINE.sub("", text))


def fences_balanced(part: str) -> bool:
    return len(FENCE_LINE.findall(part)) % 2 == 0


def well_paired(part: str) -> bool:
    """No high surrogate without its low half after it, and no low one alone."""
    i = 0
    while i < len(part):
        c = part[i]
        if "\ud800" <= c <= "\udbff":
            if i + 1 >= len(part) or not "\udc00" <= part[i + 1] <= "\udfff":
                return False
            i += 2
            continue
        if "\udc00" <= c <= "\udfff":
            return False
        i += 1
    return True


# --- examples -------------------------------------------------------------------------


def test_empty_and_blank_text_give_no_parts():
    assert split_text("", 10) == []
    assert split_text(" \n\n \t", 10) == []


def test_text_that_fits_is_returned_unchanged():
    assert split_text("  hello\n\n world ", 100) == ["  hello\n\n world "]


def test_prefers_paragraphs_then_lines_then_spaces_then_hard_cuts():
    assert split_text("aaaa bbbb\ncccc\n\ndddd", 15) == ["aaaa bbbb\ncccc", "dddd"]
    assert split_text("aaaa bbbb\ncccc dddd", 15) == ["aaaa bbbb", "cccc dddd"]
    assert split_text("aaaa bbbb cccc", 10) == ["aaaa bbbb", "cccc"]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_cut_inside_code_closes_and_reopens_the_fence_keeping_indentation():
    text = "Intro.\n\n```python\ndef f():\n    return 1\n\ndef g():\n    return 2\n```\nOutro."
    parts = split_text(text, 44)
    assert parts == [
        "Intro.\n\n```python\ndef f():\n    return 1\n```",
        "```python\ndef g():\n    return 2\n```\nOutro.",
    ]
    assert all(len(p) <= 44 for p in parts)


def test_a_cut_never_lands_inside_a_fence_line():
    text = "x" * 10 + "\n```javascript\n" + "y" * 5 + "\n```"
    for part in split_text(text, 24):
        assert fences_balanced(part)
        assert "```javas\n" not in part


def test_telegram_counts_utf16_units():
    text = "😀" * 10  # one str character each, two UTF-16 units
    parts = split_text(text, 5, utf16_length)
    assert parts == ["😀😀"] * 5


def test_surrogate_pairs_are_never_separated():
    pair = "\ud83d\ude00"  # a JSON "\ud83d\ude00" decoded without joining the halves
    parts = split_text(pair * 5, 3)
    assert parts == [pair, pair, pair, pair, pair]


def test_a_limit_too_small_for_one_character_is_an_error():
    with pytest.raises(ValueError):
        split_text("😀😀", 1, utf16_length)
    with pytest.raises(ValueError):
        split_text("abc", 0)


def test_unclosed_fence_is_closed_in_earlier_parts_and_left_as_written_in_the_last():
    text = "```sh\n" + "echo hi\n" * 10
    parts = split_text(text, 30)
    assert all(p.startswith("```sh\n") for p in parts)
    assert all(p.endswith("\n```") for p in parts[:-1])
    assert not parts[-1].endswith("```")


def test_100kb_splits_fast():
    text = ("Lorem ipsum dolor sit amet, consectetur. " * 30 + "\n") * 80 + "```\n" + "x = 1\n" * 2000 + "```\n"
    text += "z" * 20_000
    started = time.perf_counter()
    parts = split_text(text, 4096, utf16_length)
    assert time.perf_counter() - started < 0.5
    assert all(utf16_length(p) <= 4096 for p in parts)
    assert content("\n".join(parts)) == content(text)


@pytest.mark.parametrize("text", ["```\n" + " " * 50_000 + "x\n```", "x " * 50_000, "\n" * 50_000 + "y" * 5000])
def test_long_whitespace_runs_split_fast(text):
    started = time.perf_counter()
    parts = split_text(text, 4096)
    assert time.perf_counter() - started < 0.5
    assert all(len(p) <= 4096 for p in parts)


# --- properties -----------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from("abcxyz0129éß中文😀🎉"), min_size=1, max_size=12)
_sep = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", "\n\n\n"])
_prose = st.lists(st.tuples(_word, _sep), max_size=40).map(lambda ws: "".join(w + s for w, s in ws))
_code_line = st.text(alphabet=st.sampled_from("ab(){} =1😀\t"), max_size=30)
_code = st.tuples(st.sampled_from(["", "python", "js"]), st.lists(_code_line, max_size=15)).map(
    lambda c: f"\n```{c[0]}\n" + "".join(line + "\n" for line in c[1]) + "```\n"
)
_doc = st.lists(st.one_of(_prose, _code), max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_doc, limit=st.integers(min_value=16, max_value=300), utf16=st.booleans())
def test_parts_fit_balance_fences_and_keep_all_content(text, limit, utf16):
    measure = utf16_length if utf16 else len
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts)
    assert all(p.strip() for p in parts)
    assert all(fences_balanced(p) for p in parts)
    assert content("\n".join(parts)) == content(text)
    if measure(text) <= limit and text.strip():
        assert parts == [text]


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.sampled_from(["a", " ", "\n", "\ud83d\ude00", "\udbff\udfff", "```\n"]), max_size=80),
    limit=st.integers(min_value=2, max_value=40),
)
def test_surrogate_pairs_survive_any_cut(chunks, limit):
    text = "".join(chunks)
    parts = split_text(text, limit)
    assert all(len(p) <= limit for p in parts)
    assert all(well_paired(p) for p in parts)
    assert re.sub(r"[\s`]", "", "".join(parts)) == re.sub(r"[\s`]", "", text)
