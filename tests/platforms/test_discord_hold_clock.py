"""The time a message waits for the store (`discord_opened.HOLD_SECONDS`), and the time a store that failed is not
asked again (`discord_opened.STORE_RETRY_SECONDS`), count on a monotonic clock, never on the host's wall clock: NTP
stepping it forward (or a VM resumed) ended a hold at the next try, 0.5 s in, the ERROR saying the database had not
said for 60 s, and asked a failing store again at once. A read that hangs still counts: the hold ends after it.

Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`, on a real store, the adapter's clocks moved by
the test."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.testing import FakeClock
from gateway.store import GatewayStore
from platforms.discord_opened import HOLD_SECONDS, STORE_RETRY_SECONDS
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.locked_thread import Clock
from tests.platforms.sink import Sink
from tests.platforms.test_discord_thread_gaps import Corrupt
from tests.platforms.test_discord_thread_on_stored_answer import ALICE, BOB, CHANNEL, GUILD, Asked, heard, stored

fake = fake_discord()


@contextlib.asynccontextmanager
async def running(fake: FakeDiscord, tmp_path, lookup: Callable[[GatewayStore], Any], **clocks: Clock
                  ) -> AsyncIterator[tuple[Sink, GatewayStore, Any]]:
    """An adapter on ``clocks`` asking ``lookup``'s of its threads, once it heard Bob in the channel."""
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    sink, asked = Sink(), lookup(store)
    adapter = adapter_for(fake, **clocks)
    adapter.bind_answers(asked)
    await adapter.start(sink)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True)
        await fake.wait_for(lambda: sink.inbound)
        yield sink, store, asked
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
        store.close()


async def test_a_wall_clock_stepped_forward_does_not_end_a_hold(fake, tmp_path) -> None:
    wall = Clock()
    async with running(fake, tmp_path, Asked, clock=wall) as (sink, store, asked):
        answer = stored(store, "turn-1:0", fake.new_id())
        count = len(sink.inbound)
        asked.broken = True
        fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
        fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
        await fake.wait_for(lambda: len(asked.ids) >= 2)  # held: asked again by the queue
        wall.now += 3600  # NTP steps the host's clock forward
        marker = lambda: any(m.text == "marker" for m in sink.inbound[count:])  # noqa: E731
        await fake.wait_for(lambda: len(asked.ids) >= 4 or marker())  # asked again after 0.5 s, then 1 s
        assert not marker()  # was passed over at the try after the step, 0.5 s into the hold
        asked.broken = False
        await fake.wait_for(marker)
        assert [m.text for m in sink.inbound[count:]] == ["and compressed?", "marker"]


async def test_a_wall_clock_stepped_forward_does_not_ask_a_failed_store_again_early(fake, tmp_path) -> None:
    wall, corrupt = Clock(), Corrupt()  # a failure holding nothing: the threads' messages are heard as any's
    async with running(fake, tmp_path, lambda _: corrupt, clock=wall) as (sink, store, _):
        first, second = stored(store, "turn-1:0", fake.new_id()), stored(store, "turn-2:0", fake.new_id())
        assert await heard(fake, sink, first, "and compressed?") == []
        wall.now += 3600
        assert await heard(fake, sink, second, "and zipped?") == []
        assert corrupt.ids == [first]  # was [first, second]: asked again at once


class Hanging(Asked):
    """A dying disk: each read of the failing store takes longer than a hold's bound."""

    def __init__(self, store: GatewayStore, monotonic: Clock) -> None:
        super().__init__(store)
        self.monotonic = monotonic

    def __call__(self, message_id: str) -> bool:
        if self.broken:
            self.monotonic.now += HOLD_SECONDS + 1
        return super().__call__(message_id)


async def test_the_hold_counts_on_the_monotonic_clock_and_ends_though_each_read_hangs(fake, tmp_path,
                                                                                      caplog) -> None:
    wall, monotonic = Clock(), Clock()
    caplog.set_level(logging.INFO, logger="platforms.discord")
    hanging = lambda store: Hanging(store, monotonic)  # noqa: E731
    async with running(fake, tmp_path, hanging, clock=wall, monotonic=monotonic) as (sink, store, asked):
        answer, later = stored(store, "turn-1:0", fake.new_id()), stored(store, "turn-2:0", fake.new_id())
        count = len(sink.inbound)
        asked.broken = True
        said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
        fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
        wall.now -= 3600  # the wall clock, stepped back, neither lengthens the hold nor shortens it
        await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
        assert [m.text for m in sink.inbound[count:]] == ["marker"]
        assert asked.ids == [answer, answer]  # at its arrival, then once at its turn: given up on after that read
        [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert f"message {said} is passed over" in error.getMessage()
        # Given up on: a thread not asked of yet asks nothing for `STORE_RETRY_SECONDS` of the monotonic clock.
        wall.now += 3600
        assert await heard(fake, sink, later, "and zipped?") == []
        assert asked.ids == [answer, answer]
        asked.broken = False
        monotonic.now += STORE_RETRY_SECONDS
        assert await heard(fake, sink, later, "thanks") == ["thanks"]
        assert asked.ids == [answer, answer, later]
