"""`gateway.excerpt`: `typed`, the one way a command names back a word the user typed (``/agents log
ID``, ``/delegation NAME``), cut to `TYPED_CHARS`; and `excerpt`, a child's goal or summary in ``/agents``.
Both cheap whatever the size of what they cut."""

from __future__ import annotations

import time

import pytest

from gateway.excerpt import TYPED_CHARS, excerpt, typed


def test_a_short_word_is_named_back_whole_and_quoted():
    assert typed("sa-1234") == "'sa-1234'"


@pytest.mark.parametrize("word", ["x" * 5000, "é" * 5000, "🇫🇷" * 5000])
def test_a_long_word_is_cut_to_the_shared_limit(word):
    shown = typed(word)
    assert shown.endswith("…'") and len(shown) <= TYPED_CHARS + 2
    assert word.startswith(shown[1:-2])  # between whole characters: no flag halved


def test_a_megabyte_word_is_named_back_without_stalling_the_loop():
    # A webhook takes a body of up to a megabyte; `shorten` parsed all of such a word as Markdown on
    # the event loop every chat shares: seconds for one /agents log or /delegation. Only its start is read.
    word = "[a](b" * 200_000
    started = time.perf_counter()
    shown = typed(word)
    assert time.perf_counter() - started < 0.5
    assert shown.endswith("…'") and len(shown) <= TYPED_CHARS + 2


def test_a_listed_childs_huge_summary_is_cut_without_stalling_the_loop():
    # `/agents` cuts each listed child's goal and summary (`excerpt`); `shorten` parsed all of each:
    # a megabyte summary took seconds, and /agents all lists fifty children, on the loop every chat shares.
    summary = "The **result** of [the check](http://x) is `ok`, \n\n and *fine*. " * 16_000
    started = time.perf_counter()
    shown = excerpt(summary, 160)
    assert time.perf_counter() - started < 0.5
    assert shown.startswith("The **result** of [the check](http://x) is `ok`, and *fine*. The") and len(shown) <= 160


@pytest.mark.parametrize(("text", "shown"), [
    ("two\n  words", "two words"),
    ("a" + " " * 10_000 + "b" * 10_000, "a " + "b" * 7 + "…"),  # blanks count as one space, as before
    ("x" * 1_000_000, "x" * 9 + "…"),
])
def test_an_excerpt_reads_words_enough_for_its_cut(text, shown):
    assert excerpt(text, 10) == shown
