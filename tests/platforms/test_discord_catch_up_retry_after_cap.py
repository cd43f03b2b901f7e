"""Discord's catch-up holds a channel's read again after a 429 no longer than the cap it is given
(``delivery.max_retry_after``, as the outbox's), not a fixed minute: the real discord.py client against
`FakeDiscord`."""

from __future__ import annotations

import asyncio
import time

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms import discord_catch_up
from platforms.fakes.discord import FakeDiscord
from tests.platforms.test_discord_catch_up import HISTORY, USER, Sink, Store, dm_seen_once, run, stop
from tests.platforms.test_discord_rereads import Timer

A_DAY = 86400.0


async def test_a_429_asking_for_a_day_holds_the_read_again_for_the_cap_given() -> None:
    async with FakeDiscord() as fake:
        store, _ = await dm_seen_once(fake)
        dm = int(fake.dm_channel(USER))
        missed = fake.push_dm(USER, "while down")
        sink = Sink(fake)
        adapter = await run(fake, Store(), sink)  # nothing of its own to catch up on
        handed: list[int] = []

        async def deliver(message) -> None:
            handed.append(message.id)

        try:
            client, timer = adapter._require_client(), Timer()
            fake.fail_next(HISTORY, 429, retry_after=A_DAY)  # past the 30 s discord.py waits out: raised
            left = await discord_catch_up.catch_up(client, {dm: store.seen[str(dm)]}, deliver, lambda c, m: None,
                                                   now=time.time(), token=adapter._token_watch,
                                                   timer=timer, max_retry_after=5.0)
            assert left.again == [dm]
            reread = asyncio.ensure_future(discord_catch_up.reread(client, left, {dm: store.seen[str(dm)]}, deliver,
                                                                   lambda c, m: None, lambda c: None, clock=time.time))
            await fake.wait_for(lambda: timer.asked)
            assert timer.asked == [5.0]
            timer.advance(5.0)
            await asyncio.wait_for(reread, 5.0)
        finally:
            await stop(adapter)
    assert handed == [int(missed)]
