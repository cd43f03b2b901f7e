"""Invisible characters around a command count as spaces do, as the chat shows none of them: ``/stop`` with a
zero-width space a keyboard or a paste glued on was an ordinary message for the model (the turn went on), and
``/new`` followed only by invisible characters started a turn of the model answering what no one could read."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.commands import Command, parse
from platforms.formatting.blank import is_blank, trimmed

KNOWN = {"stop", "new", "help"}


@pytest.mark.parametrize("text", ["/stop\u200b", "\u200b/stop", "/stop\ufeff", "\u2060/stop\u200d ", "/stop\u200b@bot"])
def test_a_command_with_invisible_characters_around_it_is_the_command(text: str) -> None:
    assert parse(text, KNOWN) == Command("stop", "")


@pytest.mark.parametrize("text", ["/new \u200b", "/new\u200b", "/new \u2060\ufeff ", "/new\n\u200c"])
def test_new_followed_by_nothing_shown_leads_no_message(text: str) -> None:
    command = parse(text, KNOWN)
    assert command is not None and command.name == "new" and command.then_message is None


def test_new_followed_by_text_still_leads_it() -> None:
    assert parse("/new \u200bplan the trip", KNOWN).then_message == "\u200bplan the trip"
    assert parse("/new 👨\u200d👩\u200d👧", KNOWN).then_message == "👨\u200d👩\u200d👧"


def test_trimmed_keeps_what_is_shown_and_is_linear() -> None:
    assert trimmed(" \u200ba\u200b b\u200b ") == "a\u200b b"
    assert trimmed("\u200b\u200b") == ""
    text = "a" + " \u200b" * 200_000 + "b"
    started = time.process_time()
    assert trimmed(text) == text
    assert time.process_time() - started < 1.0  # quadratic, it took minutes


@pytest.mark.parametrize("args", [
    "I love you \u2764\ufe0f",  # ❤️: its variation selector makes it the red emoji
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland's flag: a tag sequence
    "\u05e9\u05dc\u05d5\u05dd!\u200f",  # a right-to-left mark keeping the ! at the Hebrew's end
])
@pytest.mark.parametrize("then", ["", "\u200b", " \u200b\n"])
def test_the_arguments_keep_their_last_character_whole(args: str, then: str) -> None:
    """Invisible characters count as spaces around a command; its arguments' last character stays whole (before, the
    red heart went to the model as a black one, the flag as a black flag)."""
    assert parse(f"/new {args}{then}", KNOWN).then_message.rstrip("\u200b \n") == args
    assert parse(f"\u200b/flag {args}{then}", KNOWN | {"flag"}).args.rstrip("\u200b \n") == args


@pytest.mark.parametrize("text", ["/stop \u200b", "/stop\u200b \u2060\n\ufeff", "!stop\u200b"])
def test_invisible_characters_after_a_command_are_no_arguments(text: str) -> None:
    assert parse(text, KNOWN) == Command("stop", "")


@pytest.mark.parametrize("text", ["/newline", "/new\u200bline", "/st\u200bop", "\u200b/ stop", "/\u200b", "a/stop",
                                  "\u200bhttps://example.com/new", "\u200b/newline \u200b"])
def test_text_that_is_no_command_stays_a_message(text: str) -> None:
    assert parse(text, KNOWN) is None


def test_trimmed_is_linear_on_long_runs_at_either_end_and_astral_ones() -> None:
    for text in ["\u200b" * 300_000 + "a", "a" + "\U000e0020" * 300_000, "\U000e0020 " * 150_000,
                 "a" + "\U000e0020\u200b" * 150_000 + "b"]:
        started = time.process_time()
        assert trimmed(text) == text.strip("\u200b\U000e0020 ")
        assert time.process_time() - started < 1.0


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(" \t\n\u200b\u200d\ufe0f\u2060\U000e0067\U000e007f\u00a0ab\u2764\U0001f3f4")))
def test_trimmed_cuts_blank_ends_alone(text: str) -> None:
    kept = trimmed(text)
    assert (kept == "") == is_blank(text)
    assert kept == "" or not (is_blank(kept[0]) or is_blank(kept[-1]))
    start = text.find(kept) if kept else 0
    assert is_blank(text[:start]) and is_blank(text[start + len(kept):]) and kept in text
