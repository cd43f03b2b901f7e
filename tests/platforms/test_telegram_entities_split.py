"""Formatting as Telegram really sends it, read by `as_markdown`: struck words cut into pieces at every other
entity's edge (TDLib's ``split_entities``: a link, an address or a mention it found, a code span), formatting on
text that shows nothing, a link's words with backslashes in them, and a link preview's zero-width space right
after a command."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiogram.types import MessageEntity

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from platforms.telegram_entities import as_markdown
from tests.platforms.sink import Sink

URL = "https://x.test/a"


def entity(kind: str, offset: int, length: int, **more: str) -> MessageEntity:
    return MessageEntity(type=kind, offset=offset, length=length, **more)


def test_struck_words_telegram_cut_at_a_link_are_struck_once() -> None:
    # "~~abc [def](url) ghi~~" as the Bot API delivers it: the strikethrough in three pieces, one inside the link.
    pieces = [entity("strikethrough", 0, 4), entity("text_link", 4, 3, url=URL), entity("strikethrough", 4, 3),
              entity("strikethrough", 7, 4)]
    assert as_markdown("abc def ghi", pieces) == f"~~abc [def]({URL}) ghi~~"


def test_struck_words_telegram_cut_at_an_address_it_found_are_struck_once() -> None:
    # "~~(see https://x.com)~~": cut at the url entity Telegram adds; "~~~~" ended and began no strikethrough.
    text = "(see https://x.com)"
    pieces = [entity("strikethrough", 0, 5), entity("url", 5, 13), entity("strikethrough", 5, 13),
              entity("strikethrough", 18, 1)]
    assert as_markdown(text, pieces) == f"~~{text}~~"


def test_struck_pieces_that_would_cut_a_link_stay_pieces() -> None:
    # "~~abc~~" with a link on "cd": one strikethrough over "abc" would cut the link, which was then lost.
    pieces = [entity("strikethrough", 0, 2), entity("text_link", 2, 2, url=URL), entity("strikethrough", 2, 1)]
    assert as_markdown("abcd", pieces) == f"~~ab~~[~~c~~d]({URL})"


@pytest.mark.parametrize("kind", ["code", "pre", "strikethrough", "blockquote"])
def test_formatting_on_nothing_visible_writes_nothing(kind: str) -> None:
    # A zero-width space alone is a blank message, not taken; in backticks or after "> " it was a turn of the model.
    assert as_markdown("\u200b", [entity(kind, 0, 1)]) == "\u200b"


def test_a_backslash_in_a_links_words_is_doubled_only_where_it_would_escape() -> None:
    assert as_markdown("C:\\Users\\me", [entity("text_link", 0, 11, url=URL)]) == f"[C:\\Users\\me]({URL})"
    assert as_markdown("a\\[b\\", [entity("text_link", 0, 5, url=URL)]) == f"[a\\\\\\[b\\\\]({URL})"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username="switchboard_bot") as fake:
        yield fake


@pytest.fixture
async def sink(fake: FakeTelegram) -> AsyncIterator[Sink]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [CommandSpec("new", "Start a new session")])
    yield sink
    await adapter.stop()


async def test_a_link_preview_right_after_a_command_is_its_address(fake, sink) -> None:
    command = {"type": "bot_command", "offset": 0, "length": 4}
    fake.push_message(7, "/new\u200b", entities=[command, {"type": "text_link", "offset": 4, "length": 1, "url": URL}])
    # Punctuation glued to a command is still the sentence's, a zero-width space in it or not.
    fake.push_message(7, "/new\u200b, go", entities=[command])
    await fake.wait_for(lambda: len(sink.inbound) >= 2)
    assert [(i.text, i.is_command) for i in sink.inbound] == [(f"/new {URL}", True), ("/new go", True)]


async def test_invisible_characters_glued_to_a_command_are_still_cut_off(fake, sink) -> None:
    command = {"type": "bot_command", "offset": 0, "length": 4}
    fake.push_message(7, "/new\u200bplan the trip", entities=[command])
    fake.push_message(7, "/new,\u200b", entities=[command])
    await fake.wait_for(lambda: len(sink.inbound) >= 2)
    assert [(i.text, i.is_command) for i in sink.inbound] == [("/new plan the trip", True), ("/new", True)]
