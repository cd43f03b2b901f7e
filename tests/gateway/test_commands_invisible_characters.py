"""Invisible characters around a command count as spaces do, as the chat shows none of them: ``/stop`` with a
zero-width space a keyboard or a paste glued on was an ordinary message for the model (the turn went on), and
``/new`` followed only by invisible characters started a turn of the model answering what no one could read."""

from __future__ import annotations

import time

import pytest

from gateway.commands import Command, parse
from platforms.formatting.blank import trimmed

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
