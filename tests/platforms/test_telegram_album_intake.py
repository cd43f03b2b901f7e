"""Albums reaching the Telegram adapter (`platforms.telegram_albums`): real aiogram against FakeTelegram,
webhook requests posted to the adapter over loopback as Telegram posts them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_a_webhook_item_delivered_again_while_its_album_gathers_is_in_it_once(fake: FakeTelegram) -> None:
    # Telegram delivers an update again when its request goes unanswered too long; an album's requests are
    # answered only once it is complete. The item joined its album a second time: its file twice in the message.
    first, second = fake.album_updates(42, [PNG, PNG + b"2"], caption="compare these")
    async with webhook_adapter(fake) as (adapter, sink):
        answers = asyncio.gather(fake.deliver_webhook(first), fake.deliver_webhook(second))
        await fake.wait_for(lambda: adapter.webhook_albums.gathering(42))
        again = await asyncio.gather(answers, fake.deliver_webhook(second))
        assert again == [[200, 200], 200]
    [album] = sink.inbound
    assert album.text == "compare these"
    assert len(album.attachments) == 2
    bot = fake.bot_user["id"]  # Telegram numbers each bot's updates on its own
    assert album.aliases == (f"{bot}:{first['update_id']}", f"{bot}:{second['update_id']}")


async def test_a_complete_album_goes_before_the_messages_that_came_after_it_on_a_busy_bot(fake: FakeTelegram) -> None:
    # While an album is held, polling looks for what came after it without confirming it. A look that found
    # anything new handed that on and kept the album, complete or not: it waited until a look's 100 updates
    # had all gone past it (on a busy bot, every look finds something new).
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1), Sink()
    adapter.albums.wait = 0.5
    await adapter.start(sink)
    try:
        items = fake.push_album(42, [PNG, PNG + b"2"], caption="compare these")
        await fake.wait_for(lambda: set(items) <= set(fake.served))
        for chat in range(1000, 1150):  # other people's messages, all in before the album is complete
            fake.push_message(chat, f"hello from {chat}")
        await fake.wait_for(lambda: len(sink.inbound) == 151)
    finally:
        await adapter.stop()
    assert sink.inbound[0].text == "compare these" and len(sink.inbound[0].attachments) == 2
    assert [i.text for i in sink.inbound[1:]] == [f"hello from {chat}" for chat in range(1000, 1150)]
