"""What the locked-thread tests share (test_discord_thread_locked_known.py, test_discord_thread_locked_quiet.py): Bob
asking the bot in a thread of a server's channel, on an adapter whose clock the test moves (`RECHECK_SECONDS`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.platforms.chat_lost import Lost, losing

GUILD, CHANNEL, THREAD, BOB = 500, 600, 800, 42
POST = "POST /channels/{channel_id}/messages"


class Clock:
    """The adapter's wall clock, moved by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def asked_in_thread(fake: FakeDiscord, clock: Clock) -> AsyncIterator[tuple[DiscordAdapter, str, Lost]]:
    """An adapter that has heard Bob ask in ``THREAD``; the id of his question; what it told lost."""
    try:
        async with losing(adapter_for(fake, clock=clock)) as (adapter, lost, sink):
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True,
                                            thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            yield adapter, asked, lost
    finally:
        await join_heartbeat_threads()
