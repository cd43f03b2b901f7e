"""`TelegramAdapter.stop_within` cancelled while the polling task it cancelled is still ending: the
cancellation is the stop's own and goes on, not taken for the polling task's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_a_stop_cancelled_while_polling_ends_ends_cancelled(fake: FakeTelegram) -> None:
    # It returned as if nothing had cancelled it: the gateway's stop went on past its cancellation.
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    running, ending, ended = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def polling() -> None:
        # Stopped before it started, polling takes a few turns of the loop to end (aiogram's own clean-up):
        # here, until the test lets it.
        running.set()
        try:
            await asyncio.Event().wait()
        finally:
            ending.set()
            await ended.wait()

    adapter._polling = asyncio.ensure_future(polling())
    polled = adapter._polling
    try:
        await running.wait()
        stopping = asyncio.ensure_future(adapter.stop_within(5))
        await ending.wait()
        stopping.cancel()
        await asyncio.wait((stopping,))
        assert stopping.cancelled()
    finally:
        ended.set()
        await asyncio.wait((polled,))
        await adapter.close()
