"""A catch-up reads a conversation again after a 429 no later than `platforms.rereads.MAX_RETRY_AFTER`
(or the cap it is given), whatever the ``Retry-After``: a proxy in front of the platform asking for a day
held every read again for that day, as long as a catch-up reads back. Discord's catch-up took the wait
uncapped (Slack's caps the error first, `tests/platforms/test_slack_retry_after_caps.py`)."""

from __future__ import annotations

import asyncio
import logging
import time

from platforms.base import RateLimited
from platforms.connection import TokenWatch
from platforms.fakes.discord import FakeDiscord
from platforms.rereads import MAX_RETRY_AFTER, Rereads
from tests.platforms.test_discord_catch_up import HISTORY, USER, dm_seen_once, run, stop
from tests.platforms.test_discord_rereads import Timer, lines

A_DAY = 86400.0
log = logging.getLogger("tests.rereads")


def rereads(timer: Timer, **kw: float) -> Rereads:
    return Rereads(TokenWatch("fake", "Fake", "fix it"), log, platform="fake", give_up_at=time.time() + 2 * A_DAY,
                   clock=time.time, timer=timer, **kw)


async def turn_after(policy: Rereads, timer: Timer) -> float:
    """The wait the turn asked of ``timer``, once it came (moved past by hand)."""
    asked = len(timer.asked)
    turn = asyncio.ensure_future(policy.turn())
    async with asyncio.timeout(1.0):
        while len(timer.asked) == asked:
            await asyncio.sleep(0)
    timer.advance(timer.asked[-1])
    assert await turn
    return timer.asked[-1]


async def test_a_429_asking_for_a_day_is_waited_out_for_a_minute_at_most(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="tests.rereads")
    timer = Timer()
    policy = rereads(timer)
    assert policy.failed("C1", RateLimited("ratelimited", retry_after=A_DAY))
    assert await turn_after(policy, timer) == MAX_RETRY_AFTER == 60.0
    assert caplog.messages[-1].endswith("reading it again in 60 s (Retry-After), and until it is read")


async def test_a_cap_passed_in_holds_and_a_shorter_retry_after_is_waited_as_asked() -> None:
    timer = Timer()
    policy = rereads(timer, max_retry_after=5.0)
    assert policy.failed("C1", RateLimited("ratelimited", retry_after=A_DAY))
    assert await turn_after(policy, timer) == 5.0
    assert policy.failed("C1", RateLimited("ratelimited", retry_after=2.0))
    assert await turn_after(policy, timer) == 2.0


async def test_discords_catch_up_reads_a_channel_a_429_asked_a_day_of_again_after_a_minute(caplog) -> None:
    async with FakeDiscord() as fake:
        store, sink = await dm_seen_once(fake)
        missed = fake.push_dm(USER, "while down")
        fake.fail_next(HISTORY, 429, retry_after=A_DAY)  # past the 30 s discord.py waits out: raised
        timer = Timer()
        adapter = await run(fake, store, sink, catch_up_timer=timer)
        dm = fake.dm_channel(USER)
        try:
            await fake.wait_for(lambda: timer.asked)
            assert timer.asked == [60.0]
            timer.advance(60.0)
            await sink.has(missed)
            await fake.wait_for(lambda: not adapter._last_seen.behind)
        finally:
            await stop(adapter)
        assert fake.errors == []
    [failed] = lines(caplog, f"discord: catching up on channel {dm}: the read failed")
    assert failed.getMessage().endswith("; reading it again in 60 s (Retry-After), and until it is read")
    assert store.seen[dm] == int(missed)
