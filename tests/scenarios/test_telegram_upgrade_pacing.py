"""A group upgraded to a supergroup costs its chat no pacing turn for a call never made.

The progress card stayed behind in the old group, where Telegram lets it change no more: the adapter
refuses its edit and its deletion without asking Telegram. The outbox waited the group's 3 s turn for
each, and counted each as a call, so the finished card reached the supergroup 6 s after the answer
instead of 3 s, and the chat stayed busy 3 s more for a deletion never made. The real aiogram client
talks to `FakeTelegram`, which enforces Telegram's flood limits on the gateway's fake clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes._waiting import wait_until
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import GROUP_PACING, TelegramAdapter
from tests.clock_steps import arrived

BOT = "sb_upgrade_bot"
GROUP = -4002
STEP = 0.25
"""Fake seconds the clock moves at a time."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


async def run_clock_until(fake: FakeTelegram, clock: FakeClock, done, seconds: float = 30.0) -> None:
    """Move the clock a step at a time, the gateway running between steps and no call on its way to the fake as
    a step is taken (`arrived`), until ``done()``."""
    for _ in range(round(seconds / STEP)):
        if done():
            return
        await arrived(fake)
        clock.advance(STEP)
        await asyncio.sleep(0.005)
    raise AssertionError(f"not done within {seconds} fake seconds")


async def card_up(fake: FakeTelegram, tmp_path, **settings):
    """A gateway on a fake clock, Telegram's flood limits enforced on it, whose turn in the group waits at
    "upgraded" with its progress card sent: (clock, flood limits, model, gateway)."""
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock)
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"progress_delay": 0.1},
                         **settings)
    model = ScriptedModel({"parent": [[{"wait": "upgraded", "text": "the answer"}]]})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        fake.push_message(GROUP, f"@{BOT} work on it", chat_type="group", user_id=5, username="bob")
        await model.reached("upgraded")
        await run_clock_until(fake, clock, lambda: fake.messages[str(GROUP)])  # the progress card
    except BaseException:
        await gateway.stop(grace=0)
        raise
    return clock, flood, model, gateway


async def test_the_finished_card_follows_the_answer_one_group_turn_later_and_the_chat_is_left_idle(fake, tmp_path):
    clock, flood, model, gateway = await card_up(fake, tmp_path)
    try:
        supergroup = fake.upgrade_group(GROUP)
        model.release("upgraded")
        done = lambda: [m for m in fake.messages[str(supergroup)] if m["text"].startswith("✓ Done")]  # noqa: E731
        await run_clock_until(fake, clock, done)
        assert [m["text"][:6] for m in fake.messages[str(supergroup)]] == ["the an", "✓ Done"]
        answered, finished = [w.at for w in flood.writes if w.chat_id == str(supergroup)]
        # Its turn in the supergroup, and not a turn more (the steps of the clock aside).
        assert GROUP_PACING.call_interval <= finished - answered < GROUP_PACING.call_interval + 1.0
        await settled(gateway, timeout=2.0)  # and nothing waits for a turn on the clock any more
        assert flood.refused == []
        assert not fake.calls_to("editMessageText") and not fake.calls_to("deleteMessage")  # never asked
        [card] = fake.messages[str(GROUP)]
        assert card["text"].startswith("⏳")
    finally:
        await gateway.stop(grace=0)


async def test_a_card_left_behind_by_an_upgrade_learned_after_its_edit_was_refused_takes_no_turn_to_delete(
        fake, tmp_path):
    # Telegram refuses the card's edit as one it cannot edit, saying nothing of the upgrade: the card is sent
    # anew, and that send, refused in the old group, tells of the upgrade. The card left behind cannot be
    # deleted either now, and the adapter says so without asking Telegram.
    # The card's heartbeat: an edit of it.
    clock, flood, model, gateway = await card_up(fake, tmp_path, agent={"gateway_notify_interval": 5.0})
    try:
        supergroup = fake.upgrade_group(GROUP)
        await run_clock_until(fake, clock, lambda: fake.messages[str(supergroup)])  # its next state, sent anew
        assert len(fake.calls_to("editMessageText")) == 1
        await wait_until(lambda: gateway.outbox.idle, 2.0)  # at once: the clock has not moved
        assert not fake.calls_to("deleteMessage")
        assert flood.refused == []
        model.release("upgraded")
        answered = lambda: any(m["text"] == "the answer" for m in fake.messages[str(supergroup)])  # noqa: E731
        await run_clock_until(fake, clock, answered)
    finally:
        await gateway.stop(grace=0)
