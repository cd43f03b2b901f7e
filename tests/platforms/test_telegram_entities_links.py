"""A link a Telegram user put on words (a ``text_link`` entity: Telegram sends the words alone as the text) reaches
the model as ``[words](address)``: "summarise this article" came without the article. In a message, a caption, an
album's caption and an edit; a link on a zero-width space (a link preview shown alone) is the address, no longer a
blank message dropped. A mention of a user without a username (``text_mention``) is the name as written. The real
aiogram client inside `TelegramAdapter` against `FakeTelegram` over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.test_invisible_only_telegram import Edits
from tests.platforms.test_invisible_only_telegram import texts_before as texts

BOT = "switchboard_bot"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
ARTICLE = "https://example.com/news/2024/rates"


def link(offset: int, length: int, url: str = ARTICLE) -> dict:
    return {"type": "text_link", "offset": offset, "length": length, "url": url}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def telegram(fake: FakeTelegram) -> AsyncIterator[tuple[Sink, Edits]]:
    adapter, sink, edits = TelegramAdapter(fake.token, api_base=fake.base_url), Sink(), Edits()
    adapter.bind_edits(edits)
    await adapter.start(sink, [CommandSpec("new", "Start a new session")])
    yield sink, edits
    await adapter.stop()


async def test_a_link_on_words_reaches_the_model_with_its_address(fake, telegram) -> None:
    sink, _ = telegram
    fake.push_message(7, "summarise this article, please", entities=[link(10, 12)])
    # UTF-16 offsets: the emoji counts two; a label's brackets escaped, so that it stays one link.
    fake.push_message(7, "😀 see [1] and docs",
                      entities=[link(3, 7, "https://w.org/a"), link(15, 4, "https://d.org")])
    # A label that is the address itself is the address; one with parentheses is put between < and >.
    fake.push_message(7, f"read {ARTICLE}", entities=[link(5, len(ARTICLE))])
    fake.push_message(7, "the language", entities=[link(4, 8, "https://en.wikipedia.org/wiki/Python_(language)")])
    assert await texts(fake, sink) == [
        f"summarise [this article]({ARTICLE}), please",
        "😀 [see \\[1\\]](https://w.org/a) and [docs](https://d.org)",
        f"read {ARTICLE}",
        "the [language](<https://en.wikipedia.org/wiki/Python_(language)>)",
    ]


async def test_a_link_on_a_zero_width_space_alone_is_its_address(fake, telegram) -> None:
    sink, _ = telegram
    fake.push_message(7, "\u200b", entities=[link(0, 1)])  # a link preview shown without the link's text
    assert await texts(fake, sink) == [ARTICLE]


async def test_a_group_message_with_a_link_is_taken_when_it_mentions_the_bot(fake, telegram) -> None:
    sink, _ = telegram
    text = f"@{BOT} summarise this"
    entities = [{"type": "mention", "offset": 0, "length": len(BOT) + 1}, link(len(BOT) + 12, 4)]
    fake.push_message(-100, text, entities=entities, chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, "not for the bot", entities=[link(0, 3)], chat_type="supergroup", user_id=5)
    fake.push_message(7, "the last one")
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "the last one")
    assert [i.text for i in sink.inbound[:-1]] == [f"@{BOT} summarise [this]({ARTICLE})"]


async def test_a_caption_and_an_album_caption_keep_their_links(fake, telegram) -> None:
    sink, _ = telegram
    fake.push_photo(7, PNG, caption="like this page", entities=[link(10, 4)])
    fake.push_album(7, [PNG, PNG], caption="both from here", entities=[link(10, 4)])
    assert await texts(fake, sink) == [f"like this [page]({ARTICLE})", f"both from [here]({ARTICLE})"]


async def test_an_edit_that_adds_a_link_hands_over_its_address(fake, telegram) -> None:
    sink, edits = telegram
    update = fake.message_update(7, "summarise this article")
    fake.push_update(update)
    await fake.wait_for(lambda: sink.inbound)
    fake.edit_message(7, update["message"]["message_id"], "summarise this article", entities=[link(10, 12)])
    await fake.wait_for(lambda: edits.texts)
    assert edits.texts == [f"summarise [this article]({ARTICLE})"]


async def test_a_mention_of_a_user_without_a_username_is_the_name_as_written(fake, telegram) -> None:
    sink, _ = telegram
    anna = {"id": 99, "is_bot": False, "first_name": "Anna"}
    mention = {"type": "text_mention", "offset": 4, "length": 4, "user": anna}
    fake.push_message(7, "ask Anna about it", entities=[mention])
    assert await texts(fake, sink) == ["ask Anna about it"]
