"""An album whose message cannot be built (`TelegramAdapter._hand_over_album`): logged and dropped, the
albums taken with it and the messages after it handed over. Real aiogram against FakeTelegram."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from platforms import telegram_files
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
BAD = "album-we-cannot-read"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own builder fails on the items of the album `BAD`, as on an item of a shape it does not read."""
    attachments_of = telegram_files.attachments_of

    def failing(message, max_bytes):
        if message.media_group_id == BAD:
            raise ValueError("an item of a shape not read")
        return attachments_of(message, max_bytes)

    monkeypatch.setattr(telegram_files, "attachments_of", failing)


async def test_an_album_that_cannot_be_built_is_dropped_with_an_error_and_the_others_go_on(
        fake: FakeTelegram, unreadable: None, caplog: pytest.LogCaptureFixture) -> None:
    # The sender's message takes both of its held albums out of the hold in one step. The first failing
    # took the second with it, and the message itself, the error only in aiogram's log of the update.
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1), Sink()
    adapter.albums.wait = 60.0  # held until the sender's message takes them
    await adapter.start(sink)
    try:
        bad = fake.push_album(42, [PNG, PNG + b"1"], caption="not readable", media_group_id=BAD)
        fake.push_album(42, [PNG + b"2", PNG + b"3"], caption="compare these")
        fake.push_message(42, "what do you think?")
        await fake.wait_for(lambda: len(sink.inbound) == 2)
        fake.push_message(42, "and later")
        await fake.wait_for(lambda: len(sink.inbound) == 3)
    finally:
        await adapter.stop()
    assert [(i.text, len(i.attachments)) for i in sink.inbound] == [
        ("compare these", 2), ("what do you think?", 0), ("and later", 0)]
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR and r.name == "platforms.telegram"]
    assert error.getMessage() == (f"telegram: could not read the album of update(s) {bad[0]}, {bad[1]} in chat 42;"
                                  " it is dropped")
    assert error.exc_info is not None and "an item of a shape not read" in str(error.exc_info[1])


async def test_a_webhook_album_that_cannot_be_built_is_answered_and_dropped_the_others_go_on(
        fake: FakeTelegram, unreadable: None) -> None:
    # Each album gathers apart here; answered 500, Telegram would deliver it again and again, failing alike.
    bad = fake.album_updates(42, [PNG, PNG + b"1"], caption="not readable", media_group_id=BAD)
    good = fake.album_updates(43, [PNG + b"2", PNG + b"3"], caption="compare these")
    async with webhook_adapter(fake) as (adapter, sink):
        answers = await asyncio.gather(*(fake.deliver_webhook(update) for update in (*bad, *good)))
        assert answers == [200, 200, 200, 200]
        assert await fake.deliver_webhook(fake.message_update(42, "and later")) == 200
    assert [(i.text, len(i.attachments)) for i in sink.inbound] == [("compare these", 2), ("and later", 0)]
