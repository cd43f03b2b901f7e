"""Answers go before other chats' progress-card edits in the Telegram bot's overall rate.

The outbox paces each chat on its own; across chats the Telegram adapter keeps to the bot's overall
limit (about 30 writes a second, `platforms.pacing.AccountRate`), and every edit counts. Waiting in that
line in the order they came, the edits of many busy cards took the slots an answer in another chat would
have had: with 120 cards edited every second and 10 answers ready at once, the answers came 3 s late, and
one in a card's own chat 7 s late. The real aiogram client talks to `FakeTelegram`, whose flood control and
the adapter's overall rate run on one fake clock, both kept small here (3 writes a second) so a few chats
fill them.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes._telegram_flood import Window
from platforms.fakes.telegram import FakeTelegram
from platforms.pacing import AccountRate
from platforms.telegram import TelegramAdapter
from tests.clock_steps import run_clock, run_clock_until

RATE = 3
"""Writes a second the bot may make overall, here (Telegram's is 30)."""
CARDS = [str(100 + n) for n in range(2 * RATE)]
ANSWERED = [str(n) for n in range(1, RATE + 1)]


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


def writes_since(fake: FakeTelegram, first: int) -> list[tuple[str, str]]:
    assert fake.flood is not None
    return [(w.method, w.chat_id) for w in fake.flood.writes[first:]]


async def test_answers_take_the_bots_next_slots_ahead_of_card_edits_waiting_for_them(fake, rig) -> None:
    clock, outbox = rig
    flood = fake.flood
    assert flood is not None
    for chat in CARDS:
        outbox.enqueue("telegram", chat, None, "⏳ Working", kind="notice", key=f"card-{chat}", silent=True)
    await fake.wait_for(lambda: len(flood.writes) == RATE)  # in the window they were let into, before it moves
    await run_clock_until(fake, clock, lambda: all(fake.messages[c] for c in CARDS) and outbox.idle)
    await run_clock(fake, clock, 2.0)  # each chat's own pace and the overall window have passed

    before = len(flood.writes)
    for chat in CARDS:  # twice the overall rate: half of them wait in the bot's line for the next second
        outbox.enqueue_edit("telegram", chat, None, f"card-{chat}:0", "⏳ Working: step 2", key=f"edit-{chat}")
    await fake.wait_for(lambda: len(flood.writes) == before + RATE)
    await clock.until_sleeping(len(CARDS) - RATE)  # the other edits wait their turn in the line
    for chat in ANSWERED:
        outbox.enqueue("telegram", chat, None, f"the answer for {chat}", kind="reply", key=f"answer-{chat}")
    await run_clock_until(fake, clock, lambda: outbox.idle and all(fake.messages[c] for c in ANSWERED))

    went = writes_since(fake, before)
    assert went[:RATE] == [("editMessageText", c) for c in CARDS[:RATE]]
    # The next second's slots are the answers', then the edits still waiting have theirs.
    assert sorted(went[RATE:2 * RATE]) == [("sendMessage", c) for c in ANSWERED]
    assert sorted(went[2 * RATE:]) == [("editMessageText", c) for c in CARDS[RATE:]]
    assert flood.refused == []
    assert all(fake.messages[c][0]["text"] == "⏳ Working: step 2" for c in CARDS)  # every card changed, once


async def test_a_card_edit_waiting_in_the_bots_line_lets_an_answer_go_when_nothing_else_waits(fake, rig) -> None:
    """Giving way is no wait of its own: an edit alone in the line goes at its turn."""
    clock, outbox = rig
    flood = fake.flood
    assert flood is not None
    for chat in CARDS[:RATE + 1]:
        outbox.enqueue("telegram", chat, None, "⏳ Working", kind="notice", key=f"card-{chat}", silent=True)
    await fake.wait_for(lambda: len(flood.writes) == RATE)
    start = clock.monotonic()
    await run_clock_until(fake, clock, lambda: len(flood.writes) == RATE + 1)
    assert flood.writes[-1].at - start == pytest.approx(1.0, abs=0.3)  # the next second's first slot
