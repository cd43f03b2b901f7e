"""`platforms.chat_losses.LostChats` at its edges, through `TelegramAdapter` (real aiogram, polling the loopback
`FakeTelegram`): a stop a close cut off while the store refused it is told once the adapter is started again, and a
write refused while Telegram's own update is being told tells nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import Forbidden, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def reply(chat: int) -> Outbound:
    return Outbound(chat_id=str(chat), thread_id=None, text="an answer")


class Held(Lost):
    """Holds the first telling until ``go`` is set: the gateway still stopping the chat's work."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.go = asyncio.Event()

    async def __call__(self, chat_id: str, why: str) -> None:
        self.calls += 1
        if self.calls == 1:
            await self.go.wait()
        await super().__call__(chat_id, why)


async def test_a_stop_the_close_cut_off_is_told_after_the_adapter_starts_again(fake):
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    async with losing(adapter) as (_, lost, sink):
        lost.refuse = 1_000  # the disk stays full until the stop
        fake.remove_bot(42, update=False)
        with pytest.raises(Forbidden):
            await adapter.send(reply(42))
        await fake.wait_for(lambda: lost.refuse < 1_000)  # refused once: asked again later
    lost.refuse = 0
    await adapter.start(sink)
    try:
        with pytest.raises(Forbidden):
            await adapter.send(reply(42))
        await fake.wait_for(lambda: lost.told)
        assert lost.told == [("42", "bot was blocked by the user")]
    finally:
        await adapter.stop()


async def test_a_write_refused_while_the_update_is_told_tells_nothing_more(fake):
    lost = Held()
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    adapter.bind_chat_lost(lost)
    await adapter.start(Sink())
    try:
        fake.remove_bot(42)
        await fake.wait_for(lambda: lost.calls == 1)
        with pytest.raises(Forbidden):
            await adapter.send(reply(42))  # the running turn's answer, refused meanwhile
        lost.go.set()
        await fake.wait_for(lambda: lost.told and not fake.pending)
        for _ in range(3):  # a telling started by the refusal gets its turn
            await asyncio.sleep(0)
        assert lost.told == [("42", "the bot was blocked by the user")]
        assert lost.calls == 1
    finally:
        await adapter.stop()
