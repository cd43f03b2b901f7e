"""The Telegram bot's overall rate (`platforms.pacing.AccountRate` in `platforms.telegram`): the outbox
paces each chat on its own, so a burst to many chats at once went out all together and Telegram refused
what was past about 30 messages a second with 429s. Real aiogram against FakeTelegram's flood control,
both on one fake clock (manual: time moves only when the test says so)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.testing.clock import FakeClock
from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.pacing import AccountRate
from platforms.telegram import BOT_WRITES_PER_SECOND, TelegramAdapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_a_burst_to_many_chats_keeps_to_the_bots_overall_rate_and_draws_no_429(fake: FakeTelegram) -> None:
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock)
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url,
                              bot_rate=AccountRate(BOT_WRITES_PER_SECOND, 1.0, clock=clock.monotonic,
                                                   sleep=clock.sleep))
    chats = range(1, 46)  # one message to each of 45 chats: each chat's own pace allows it
    try:
        sends = [asyncio.ensure_future(adapter.send(Outbound(chat_id=str(c), thread_id=None, text=f"hi {c}")))
                 for c in chats]
        await fake.wait_for(lambda: clock.sleeping == 45 - BOT_WRITES_PER_SECOND or flood.refused)
        assert flood.refused == []  # the 429s Telegram gave past its limit
        await fake.wait_for(lambda: len(flood.writes) == BOT_WRITES_PER_SECOND)
        clock.advance(1.0)
        await asyncio.wait_for(asyncio.gather(*sends), 5)
    finally:
        await adapter.stop()
    assert flood.refused == []
    assert len(flood.writes) == 45
    assert [w.at for w in flood.writes].count(clock.monotonic()) == 45 - BOT_WRITES_PER_SECOND


async def test_an_account_rate_lets_count_calls_go_at_once_then_the_next_as_the_oldest_leaves() -> None:
    clock = FakeClock()  # autojump: each sleep moves time by its own length
    start = clock.monotonic()
    rate = AccountRate(3, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    went = []
    for _ in range(7):
        await rate.turn()
        went.append(clock.monotonic() - start)
    assert went == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0]
    assert clock.sleeps == [1.0, 1.0]


def test_an_account_rate_refuses_a_rate_that_lets_nothing_through() -> None:
    with pytest.raises(ValueError, match="count >= 1 and per > 0"):
        AccountRate(0, 1.0)
