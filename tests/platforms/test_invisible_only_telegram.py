"""A Telegram message whose text or caption shows nothing, only invisible characters (word joiners, variation
selectors, zero-width spaces: what `platforms.formatting.blank.is_blank` calls blank; Telegram itself refuses only
some of them as empty): not taken, as an empty message is not, where it cost a turn of the model answering what no
one could read. A file with such a caption is the file; an edit to such text is not handed over, as an edit that
leaves a message not for the bot is not. The real aiogram client inside `TelegramAdapter` against `FakeTelegram` over
loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

BOT = "switchboard_bot"
INVISIBLE = ["\u2060", "\u200b\u2060", "\ufe0f", " \u200d ", "\u2060\n\ufeff"]
PHOTO = [{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90, "file_size": 100}]


class Edits:
    """Stands in for the gateway's `MessageEdits.edited`: records each edit handed over."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


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


async def texts_before(fake: FakeTelegram, sink: Sink) -> list[str]:
    """The texts handed over, once a message written after those pushed so far is: polling hands them in order."""
    fake.push_message(7, "the last one")
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "the last one")
    return [inbound.text for inbound in sink.inbound[:-1]]


@pytest.mark.parametrize("text", INVISIBLE)
async def test_a_message_of_invisible_characters_alone_is_not_taken(fake, telegram, text) -> None:
    sink, _ = telegram
    fake.push_message(7, text, entities=[])
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, text, entities=[], reply_to_bot=True, **group)  # a reply to the bot addresses it
    assert await texts_before(fake, sink) == []


async def test_a_photo_with_a_caption_of_invisible_characters_alone_is_the_photo(fake, telegram) -> None:
    sink, _ = telegram
    update = fake.message_update(7, "", entities=[])
    del update["message"]["text"]
    update["message"].update(photo=PHOTO, caption="\u200b\u2060")
    fake.push_update(update)
    await fake.wait_for(lambda: sink.inbound)
    (inbound,) = sink.inbound
    assert inbound.text == "" and [a.kind for a in inbound.attachments] == ["image"]


async def test_an_edit_to_invisible_characters_alone_is_not_handed_over(fake, telegram) -> None:
    sink, edits = telegram
    update = fake.message_update(7, "deploy to prod")
    fake.push_update(update)
    message_id = update["message"]["message_id"]
    await fake.wait_for(lambda: sink.inbound)
    fake.edit_message(7, message_id, "\u2060")
    fake.edit_message(7, message_id, "deploy to staging")
    await fake.wait_for(lambda: edits.texts)
    assert edits.texts == ["deploy to staging"]  # polling hands updates over in order: the first was passed over
