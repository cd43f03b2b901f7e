"""A chat's stop (``my_chat_member``: the bot blocked or removed) while other chats talk: `TelegramAdapter` (real
aiogram, polling the loopback `FakeTelegram`) tells the gateway in a task of its own, so a slow stop (a journal
commit, a distributed engine) holds up no other chat's messages, while a message of the same chat waits until the
stop took effect. In webhook mode, a message written just before the block and delivered after its update starts a
turn whose refused write tells the stop once more, and nothing after that."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import Forbidden, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


class Slow(Lost):
    """A gateway whose first stop waits until ``go`` is set (its journal committing); ``events``: the stops it
    took and the messages a `Recorded` sink took, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.go = asyncio.Event()
        self.events: list[str] = []

    async def __call__(self, chat_id: str, why: str, thread_id: str | None = None) -> None:
        self.calls += 1
        if self.calls == 1:
            await self.go.wait()
        await super().__call__(chat_id, why, thread_id)
        self.events.append(f"stopped {chat_id}")


class Recorded(Sink):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def __call__(self, inbound) -> None:
        await super().__call__(inbound)
        self.events.append(f"{inbound.chat_id}: {inbound.text}")


async def polling(fake: FakeTelegram, lost: Lost, sink: Sink) -> TelegramAdapter:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    adapter.bind_chat_lost(lost)
    await adapter.start(sink)
    return adapter


async def test_another_chats_message_is_answered_while_a_stop_waits(fake):
    lost = Slow()
    adapter = await polling(fake, lost, sink := Recorded(lost.events))
    try:
        fake.remove_bot(42)
        await fake.wait_for(lambda: lost.calls == 1)
        fake.push_message(7, "hello")
        await fake.wait_for(lambda: sink.inbound, timeout=2)
        assert lost.told == []  # the stop still waits
        lost.go.set()
        await fake.wait_for(lambda: lost.told)
        assert lost.events == ["7: hello", "stopped 42"]
        assert lost.told == [("42", "the bot was blocked by the user")]
    finally:
        await adapter.stop()


async def test_a_message_of_the_same_chat_waits_until_its_stop_took_effect(fake):
    lost = Slow()
    adapter = await polling(fake, lost, sink := Recorded(lost.events))
    try:
        fake.remove_bot(-1005)
        await fake.wait_for(lambda: lost.calls == 1)
        fake.add_bot(-1005)  # added back at once, and written to
        written = fake.push_message(-1005, "/start")
        await fake.wait_for(lambda: written in fake.served, timeout=2)  # read from Telegram
        await asyncio.sleep(0.05)  # the message's hand-over had its chance to overtake the stop
        assert sink.inbound == []
        lost.go.set()
        await fake.wait_for(lambda: sink.inbound)
        assert lost.events == ["stopped -1005", "-1005: /start"]
    finally:
        await adapter.stop()


async def test_a_stop_under_way_when_the_adapter_stops_ends_with_it(fake):
    lost = Slow()
    adapter = await polling(fake, lost, Sink())
    fake.remove_bot(42)
    await fake.wait_for(lambda: lost.calls == 1)
    await asyncio.wait_for(adapter.stop(), 2)  # not held by the stop, which the gateway's own stop ends anyway
    assert lost.told == []


async def test_a_stop_the_store_refused_is_asked_again_while_other_chats_talk(fake):
    async with losing(TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)) as (_, lost, sink):
        lost.refuse = 1
        fake.remove_bot(42)
        fake.push_message(7, "hello")
        await fake.wait_for(lambda: sink.inbound)
        await fake.wait_for(lambda: lost.told, timeout=5)
        assert lost.told == [("42", "the bot was blocked by the user")]
        assert [m.chat_id for m in sink.inbound] == ["7"]


async def test_a_message_of_the_chat_ends_a_stop_the_store_keeps_refusing(fake):
    async with losing(TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)) as (_, lost, sink):
        lost.refuse = 1_000  # the disk stays full
        fake.remove_bot(42)
        await fake.wait_for(lambda: lost.refuse < 1_000)
        fake.add_bot(42)
        fake.push_message(42, "I am back")
        await fake.wait_for(lambda: sink.inbound)  # handed over once the stop gave up: it would end its turn
        lost.refuse = 0
        for _ in range(3):
            await asyncio.sleep(0)
        assert lost.told == []


async def test_a_webhook_message_written_before_the_block_is_stopped_by_its_refused_answer(fake):
    lost = Lost()
    async with webhook_adapter(fake) as (adapter, sink):
        adapter.bind_chat_lost(lost)
        written = fake.message_update(42, "are you there?")  # sent just before the block...
        fake.remove_bot(42)
        (blocked,) = fake.pending
        assert await fake.deliver_webhook(blocked) == 200
        assert lost.told == [("42", "the bot was blocked by the user")]
        assert await fake.deliver_webhook(written) == 200  # ...delivered after it: its turn starts
        assert [m.text for m in sink.inbound] == ["are you there?"]
        for text in ("first part", "second part"):  # the turn's answer, refused: told once more
            with pytest.raises(Forbidden):
                await adapter.send(Outbound(chat_id="42", thread_id=None, text=text))
        await fake.wait_for(lambda: len(lost.told) == 2)
        for _ in range(3):  # a telling more would have had its turn
            await asyncio.sleep(0)
        assert lost.told == [("42", "the bot was blocked by the user"), ("42", "bot was blocked by the user")]
