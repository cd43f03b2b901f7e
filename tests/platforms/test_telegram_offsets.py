"""What polling confirms to Telegram (the ``offset`` of its next getUpdates): only updates handed over,
also across a stop and a start of one adapter. Real aiogram against FakeTelegram."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

UNREADABLE = {"message": {"message_id": 9, "date": 1, "text": "in no chat"}}
"""An update aiogram cannot read even in part (`platforms.telegram_updates`): skipped, confirmed past."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_a_restart_confirms_no_update_of_the_last_run_it_did_not_hand_over(fake: FakeTelegram) -> None:
    # The offset past an unreadable update outlived the stop: the next start's first poll asked from it,
    # and Telegram took the update before it, never recorded, as handled.
    handing: list[Inbound] = []

    async def stuck(inbound: Inbound) -> None:
        handing.append(inbound)
        await asyncio.Event().wait()  # the stop comes while the gateway is recording it

    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    first = fake.push_message(42, "did you get this?")
    fake.push_update(UNREADABLE)  # same batch, after it
    await adapter.start(stuck)
    try:
        await fake.wait_for(lambda: handing)
        await adapter.stop()
        assert [u["update_id"] for u in fake.pending][:1] == [first]
        sink = Sink()
        await adapter.start(sink)
        fake.push_message(42, "sentinel")
        await fake.wait_for(lambda: "sentinel" in [i.text for i in sink.inbound])
        assert [i.text for i in sink.inbound] == ["did you get this?", "sentinel"]
    finally:
        await adapter.stop()
