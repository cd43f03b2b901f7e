"""A chat's answer is not held by its own progress card's edit waiting in the Telegram bot's overall line.

The outbox sends a chat's writes one at a time; across chats the Telegram adapter keeps to the bot's overall
limit (`platforms.pacing.AccountRate`), where a card's edit gives way to every other write for up to 5 s. An
edit already handed to the adapter held its own chat's answer behind it: with 120 busy cards the answer in a
card's chat came 7 s late (`bench/fairness_bench.py`). Now the edit steps aside (`STEPS_ASIDE`) once the answer
is queued: the answer takes the bot's next slot, and the card still ends showing its newest state, once. The
real aiogram client talks to `FakeTelegram`, whose flood control and the adapter's overall rate run on one fake
clock, kept small here (3 writes a second) so a few chats fill them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes._telegram_flood import Window
from platforms.fakes.telegram import FakeTelegram
from platforms.pacing import GIVES_WAY, STEPS_ASIDE, AccountRate, SteppedAside
from platforms.telegram import TelegramAdapter
from tests.clock_steps import run_clock, run_clock_until

RATE = 3
"""Writes a second the bot may make overall, here (Telegram's is 30)."""
CARDS = [str(100 + n) for n in range(2 * RATE)]
LAST = CARDS[-1]
"""A card's chat whose edit waits in the bot's line for the next second (the first ``RATE`` go at once)."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def rig(fake: FakeTelegram, tmp_path) -> AsyncIterator[tuple[FakeClock, Outbox]]:
    clock = FakeClock(autojump=False)
    fake.enforce_flood_limits(clock, overall=Window(RATE, 1.0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url,
                              bot_rate=AccountRate(RATE, 1.0, clock=clock.monotonic, sleep=clock.sleep))
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"telegram": adapter}, clock=clock, rng=random.Random(5))
    await outbox.start()
    try:
        yield clock, outbox
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()


async def cards_edited(fake: FakeTelegram, clock: FakeClock, outbox: Outbox) -> int:
    """Every card sent, then edited at once: ``RATE`` edits go, the others wait in the bot's line. The number of
    writes before the edits."""
    flood = fake.flood
    assert flood is not None
    for chat in CARDS:
        outbox.enqueue("telegram", chat, None, "⏳ Working", kind="notice", key=f"card-{chat}", silent=True)
    await fake.wait_for(lambda: len(flood.writes) == RATE)  # in the window they were let into, before it moves
    await run_clock_until(fake, clock, lambda: all(fake.messages[c] for c in CARDS) and outbox.idle)
    await run_clock(fake, clock, 2.0)  # each chat's own pace and the overall window have passed
    before = len(flood.writes)
    for chat in CARDS:
        outbox.enqueue_edit("telegram", chat, None, f"card-{chat}:0", "⏳ Working: step 2", key=f"edit-{chat}")
    await fake.wait_for(lambda: len(flood.writes) == before + RATE)
    await clock.until_sleeping(len(CARDS) - RATE)  # the other edits wait their turn in the line
    return before


async def test_a_chats_answer_goes_before_its_own_card_edit_waiting_in_the_bots_line(fake, rig) -> None:
    clock, outbox = rig
    flood = fake.flood
    assert flood is not None
    before = await cards_edited(fake, clock, outbox)
    asked = clock.monotonic()
    outbox.enqueue("telegram", LAST, None, "the answer", kind="reply", key="answer")
    await run_clock_until(fake, clock, lambda: outbox.idle and len(fake.messages[LAST]) == 2)

    own = [(w.method, w.at - asked) for w in flood.writes[before:] if w.chat_id == LAST]
    # The bot's next slot; behind its edit it waited for that slot, then a second more (the chat's own pace).
    assert own[0] == ("sendMessage", pytest.approx(1.0, abs=0.01)), own
    assert [method for method, _ in own] == ["sendMessage", "editMessageText"]  # the edit after it, not lost
    assert [m["text"] for m in fake.messages[LAST]] == ["⏳ Working: step 2", "the answer"]  # each once
    assert all(fake.messages[c][0]["text"] == "⏳ Working: step 2" for c in CARDS)  # no card left behind
    assert flood.refused == []


async def test_the_cards_final_state_queued_with_the_answer_replaces_the_edit_that_stepped_aside(fake, rig) -> None:
    """As a turn ends: its answer, then its card's final line. The edit that stepped aside is never made; the
    card goes straight to its final line, after the answer."""
    clock, outbox = rig
    flood = fake.flood
    assert flood is not None
    before = await cards_edited(fake, clock, outbox)
    outbox.enqueue("telegram", LAST, None, "the answer", kind="reply", key="answer")
    outbox.enqueue_edit("telegram", LAST, None, f"card-{LAST}:0", "✓ Done", key="final")
    await run_clock_until(fake, clock, lambda: outbox.idle and len(fake.messages[LAST]) == 2)

    assert [w.method for w in flood.writes[before:] if w.chat_id == LAST] == ["sendMessage", "editMessageText"]
    assert fake.messages[LAST][0]["edits"] == ["✓ Done"]
    assert [m["text"] for m in fake.messages[LAST]] == ["✓ Done", "the answer"]
    assert flood.refused == []


async def test_a_write_stepping_aside_gives_its_turn_to_the_next_at_once() -> None:
    """`AccountRate` alone: the edit waiting for its turn leaves the line as its event is set, and the write
    behind it takes that turn."""
    clock = FakeClock(autojump=False)
    start = clock.monotonic()
    rate = AccountRate(1, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    await rate.turn()
    answer_queued = asyncio.Event()
    went: list[tuple[str, float]] = []

    async def edit(name: str, aside: asyncio.Event | None) -> None:
        GIVES_WAY.set(True)
        STEPS_ASIDE.set(aside)
        await rate.turn()
        went.append((name, clock.monotonic() - start))

    stepping = asyncio.ensure_future(edit("its chat answers", answer_queued))
    await clock.until_sleeping(1)
    behind = asyncio.ensure_future(edit("another card", None))  # its turn at 2 s
    await clock.until_sleeping(2)
    answer_queued.set()
    with pytest.raises(SteppedAside):
        await asyncio.wait_for(stepping, 5)
    clock.advance(1.0)
    await asyncio.wait_for(behind, 5)
    assert went == [("another card", 1.0)]


async def test_in_a_group_the_edit_that_stepped_aside_does_not_hold_the_chat_for_its_pace(fake, tmp_path) -> None:
    """From review: the edit is counted against its chat's pace as it starts (`Pacer.called` before the call). One
    that steps aside made no call, so the answer waits for the bot's next slot only, not a group's 3 s from the
    edit's start; the chat's last write was long before."""
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock, overall=Window(RATE, 1.0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url,
                              bot_rate=AccountRate(RATE, 1.0, clock=clock.monotonic, sleep=clock.sleep))
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"telegram": adapter}, clock=clock, rng=random.Random(5))
    await outbox.start()
    groups = [f"-{chat}" for chat in CARDS]
    last = groups[-1]
    try:
        for chat in groups:
            outbox.enqueue("telegram", chat, None, "⏳ Working", kind="notice", key=f"card-{chat}", silent=True)
        await fake.wait_for(lambda: len(flood.writes) == RATE)
        await run_clock_until(fake, clock, lambda: all(fake.messages[c] for c in groups) and outbox.idle)
        await run_clock(fake, clock, 5.0)  # each group's own pace and the overall window have passed
        before = len(flood.writes)
        for chat in groups:
            outbox.enqueue_edit("telegram", chat, None, f"card-{chat}:0", "⏳ Working: step 2", key=f"edit-{chat}")
        await fake.wait_for(lambda: len(flood.writes) == before + RATE)
        await clock.until_sleeping(len(groups) - RATE)
        asked = clock.monotonic()
        outbox.enqueue("telegram", last, None, "the answer", kind="reply", key="answer")
        await run_clock_until(fake, clock, lambda: outbox.idle and len(fake.messages[last]) == 2)
        own = [(w.method, w.at - asked) for w in flood.writes[before:] if w.chat_id == last]
        assert own[0] == ("sendMessage", pytest.approx(1.0, abs=0.01)), own
        assert [m["text"] for m in fake.messages[last]] == ["⏳ Working: step 2", "the answer"]
        assert flood.refused == []
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
