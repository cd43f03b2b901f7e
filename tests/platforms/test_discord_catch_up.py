"""What was said to the bot while the adapter was down, asked of the fake's message history at
the next start (`platforms.discord_catch_up`): the real discord.py client against `FakeDiscord`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms import discord_catch_up
from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, USER = 500, 600, 42
HISTORY = "GET /channels/{channel_id}/messages"
LOOKUP = "GET /channels/{channel_id}"


class Store:
    """The gateway's `LastSeen`, for one platform."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def record(self, channel: str, message: str) -> None:
        assert int(message) > self.seen.get(channel, 0), "only ever a newer message is recorded"
        self.seen[channel] = int(message)


class Sink:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.events: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)

    async def has(self, event_id: str) -> None:
        await self.fake.wait_for(lambda: any(e.event_id == event_id for e in self.events))


fake = fake_discord()


async def run(fake: FakeDiscord, store: Store, sink: Sink, **kw) -> DiscordAdapter:
    adapter = adapter_for(fake, **kw)
    adapter.bind_last_seen({channel: str(message) for channel, message in store.seen.items()}, store.record,
                           lambda channel: None)
    await adapter.start(sink)
    return adapter


async def stop(adapter: DiscordAdapter) -> None:
    await adapter.stop()
    await join_heartbeat_threads()


async def dm_seen_once(fake: FakeDiscord) -> tuple[Store, Sink]:
    """A store and sink that saw one DM ("one") in a run now stopped: the DM has a last message seen."""
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "one"))
    finally:
        await stop(adapter)
    return store, sink


async def missed_then_later(fake: FakeDiscord, store: Store, sink: Sink, missed: str) -> None:
    """A next start hands ``missed`` over, and a live message after it."""
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed)
        await sink.has(fake.push_dm(USER, "later"))
    finally:
        await stop(adapter)


async def test_what_was_said_while_down_is_handed_over_at_the_next_start_oldest_first(fake: FakeDiscord) -> None:
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "one"))
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True))
        await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="hello", idempotency_key=f"k{len(fake.calls)}"))
        dm = fake.dm_channel(USER)
        await adapter.send(Outbound(chat_id=dm, thread_id=None, text="hello", idempotency_key=f"k{len(fake.calls)}"))
        await fake.wait_for(lambda: store.seen.get(dm) == int(fake.bot_messages(dm)[-1].id))
    finally:
        await stop(adapter)
    before = len(sink.events)
    missed = [fake.push_dm(USER, "two"), fake.push_dm(USER, "three")]
    fake.push_guild_message(GUILD, CHANNEL, USER, "just chatting")  # not for the bot
    missed.append(fake.push_guild_message(GUILD, CHANNEL, USER, "four", mention_bot=True))
    fake._echo(fake._store(dm, fake.bot_id, "the bot's own, from elsewhere", from_bot=True))
    adapter = await run(fake, store, sink)
    try:
        live = fake.push_dm(USER, "five")  # waits for what was missed, which is older
        for event_id in (*missed, live):
            await sink.has(event_id)
    finally:
        await stop(adapter)
    # Each chat in its order; one that came live and is in the history too is the inbox's to drop.
    caught = list({e.event_id: e for e in sink.events[before:]}.values())
    assert [(e.event_id, e.text) for e in caught if e.is_private] == [*zip(missed[:2], ["two", "three"]), (live, "five")]
    assert [(e.event_id, e.text) for e in caught if not e.is_private] == [(missed[2], "four")]
    assert store.seen[str(CHANNEL)] == int(fake.messages[str(CHANNEL)][-1].id)


async def test_what_was_said_between_an_invalidated_session_and_the_next_is_handed_over_from_the_history(
        fake: FakeDiscord) -> None:
    # Discord sends no session what is said while none of the bot's is valid, the new one included:
    # only the catch-up at its READY finds it, in the history, while the process runs on.
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "one"))
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True))
        fake.invalidate_session()  # invalid at once; discord.py reads the op 9 later
        gap = [fake.push_dm(USER, "between sessions"),
               fake.push_guild_message(GUILD, CHANNEL, USER, "also between", mention_bot=True)]
        await fake.wait_for(lambda: [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 2])  # a new session
        live = fake.push_dm(USER, "after")
        for event_id in (*gap, live):
            await sink.has(event_id)
    finally:
        await stop(adapter)
    assert len(fake.calls_to(HISTORY)) == 2  # one read a channel, at the new session's READY
    heard = list({e.event_id: e for e in sink.events}.values())  # "after" perhaps live and read too
    assert [e.text for e in heard if e.is_private] == ["one", "between sessions", "after"]
    assert [e.text for e in heard if not e.is_private] == ["hi", "also between"]


async def test_messages_older_than_a_day_are_not_answered_and_a_warning_says_so(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # A day old by its snowflake, on Discord's clock (the host's may be off: `test_discord_catch_up_clock`).
    dm = fake.dm_channel(USER)
    store, sink = Store(), Sink(fake)
    store.seen[dm] = discord_catch_up._snowflake(time.time() - 26 * 3600)
    old = fake._store(dm, str(USER), "too old by the time the bot is back", from_bot=False,
                      message_id=str(discord_catch_up._snowflake(time.time() - 25 * 3600))).id
    adapter = await run(fake, store, sink)
    try:
        await fake.wait_for(lambda: store.seen[dm] == int(old))  # looked at, not answered
        await sink.has(live := fake.push_dm(USER, "now"))
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["now"]
    assert fake.calls_to(HISTORY)  # it was looked at
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"discord: channel {dm}: 1 message(s) older than 24 h were sent while the gateway was down" \
           " and are not answered" in warnings
    assert store.seen[dm] == int(live)


async def test_a_channel_with_nothing_new_costs_no_history_request(fake: FakeDiscord) -> None:
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True))
    finally:
        await stop(adapter)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "again", mention_bot=True))
    finally:
        await stop(adapter)
    assert fake.calls_to(HISTORY) == []
    assert [e.text for e in sink.events] == ["hi", "again"]


async def test_a_dm_whose_lookup_is_slow_does_not_hold_up_the_catch_up_of_the_others(fake: FakeDiscord) -> None:
    # A DM's channel is not sent with READY, so each costs a lookup (GET /channels/{id}) at every
    # start: one after another, a hundred quiet DMs spent the deadline and the channels after them
    # were not caught up.
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER + 1, "one"))
        await sink.has(fake.push_dm(USER, "one too"))  # the most recently active: looked up first
    finally:
        await stop(adapter)
    slow, other = fake.dm_channel(USER), fake.dm_channel(USER + 1)
    late = fake.push_dm(USER, "while down")
    missed = fake.push_dm(USER + 1, "while down too")
    release = fake.hold(f"GET /channels/{slow}")
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed)  # while the first lookup is still unanswered
        assert not any(e.event_id == late for e in sink.events)
        assert [c.path for c in fake.calls_to(LOOKUP)] == [f"/channels/{slow}", f"/channels/{other}"]
        release.set()
        await sink.has(late)
        await sink.has(fake.push_dm(USER, "live"))
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["one", "one too", "while down too", "while down", "live"]


async def test_exactly_the_bound_of_new_messages_is_all_answered_without_a_warning_one_more_is_warned_of(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    dm = fake.dm_channel(USER)
    missed = [fake.push_dm(USER, f"while down {n}") for n in range(discord_catch_up.MAX_MESSAGES)]
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed[-1])
    finally:
        await stop(adapter)
    assert [e.event_id for e in sink.events[1:]] == missed  # none was before them
    assert not [r for r in caplog.records if r.levelno == logging.WARNING and "not answered" in r.getMessage()]

    missed = [fake.push_dm(USER, f"again {n}") for n in range(discord_catch_up.MAX_MESSAGES + 1)]
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed[-1])
    finally:
        await stop(adapter)
    assert [e.event_id for e in sink.events[1 + discord_catch_up.MAX_MESSAGES:]] == missed[1:]
    assert f"discord: channel {dm}: any before the newest 100 were sent while the gateway was down and are not" \
           " answered" in caplog.messages


async def test_a_catch_up_that_gets_no_answer_is_given_up_at_its_deadline_and_live_messages_flow(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    fake.push_dm(USER, "while down")
    fake.hold(HISTORY)  # never answered, as a Discord that hangs (or a long 429) would leave it
    adapter = await run(fake, store, sink, catch_up_timeout=0.2)
    try:
        await fake.wait_for(lambda: fake.calls_to(HISTORY))
        await sink.has(fake.push_dm(USER, "live"))  # not held back for good
        assert adapter._caught_up.is_set()
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["one", "live"]
    dm = fake.dm_channel(USER)
    assert f"discord: the catch-up did not finish within 0.2 s: channel(s) {dm} not caught up; what was sent" \
           " there while the gateway was down is looked for again while live messages flow" in caplog.messages


async def test_a_channel_left_at_the_deadline_is_looked_at_again_at_the_next_start(fake: FakeDiscord) -> None:
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    release = fake.hold(HISTORY)
    adapter = await run(fake, store, sink, catch_up_timeout=0.2)
    try:
        await sink.has(fake.push_dm(USER, "live"))  # after the deadline, before the channel was caught up
    finally:
        await stop(adapter)
    release.set()
    await missed_then_later(fake, store, sink, missed)
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down", "later"]


async def test_a_channel_whose_history_was_refused_for_good_is_looked_at_again_at_the_next_start(
        fake: FakeDiscord) -> None:
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 403, code=50001)  # Missing Access: the bot's access was removed (and given back later)
    adapter = await run(fake, store, sink)
    try:
        await fake.wait_for(lambda: fake.calls_to(HISTORY))
        await sink.has(fake.push_dm(USER, "live"))
    finally:
        await stop(adapter)
    assert len(fake.calls_to(HISTORY)) == 1  # not read again meanwhile: it would be refused alike
    await missed_then_later(fake, store, sink, missed)
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down", "later"]


async def test_the_channels_past_the_bound_are_named_in_a_warning(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "one"))
        await sink.has(fake.push_dm(USER + 1, "one too"))  # the most recently active
    finally:
        await stop(adapter)
    fake.push_dm(USER, "while down")
    missed = fake.push_dm(USER + 1, "while down too")
    monkeypatch.setattr("platforms.discord_catch_up.MAX_CHANNELS", 1)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed)
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["one", "one too", "while down too"]
    quiet = fake.dm_channel(USER)
    assert f"discord: 1 channel(s) quiet longest, over the 1 caught up on, not caught up: {quiet}; what was" \
           " sent there while the gateway was down is not answered" in caplog.messages


def test_the_channels_kept_for_a_catch_up_after_a_reconnect_are_the_most_recently_active_ten_thousand():
    # Every channel, thread and DM the bot hears a message in was kept for as long as the process ran.
    adapter = DiscordAdapter("token")
    recorded: list[tuple[int, int]] = []
    adapter.bind_last_seen({"7": "5"}, lambda channel, message: recorded.append((int(channel), int(message))),
                           lambda channel: None)
    for channel in range(100, 20_100):
        adapter._last_seen.seen(channel, 1_000_000 + channel)
    adapter._last_seen.seen(7, 6)  # an old channel heard in again is recent again
    last_seen = adapter._last_seen.last_seen
    assert len(last_seen) == 10_000
    assert last_seen[7] == 6 and last_seen[20_099] == 1_020_099 and 10_100 not in last_seen
    adapter._last_seen.seen(20_099, 1_020_098)  # an older message than the one held is still not recorded
    assert recorded[-1] == (7, 6) and len(recorded) == 20_001


class SlowToGiveIn(Sink):
    """A sink that finishes recording the event ``slow`` before it gives in to a cancellation: here
    its record ends once the adapter asks Discord's history again, or after ``wind_down`` seconds."""

    def __init__(self, fake: FakeDiscord, slow: str, wind_down: float) -> None:
        super().__init__(fake)
        self.slow, self.wind_down = slow, wind_down
        self.handing: asyncio.Task | None = None
        """The task that handed ``slow`` over first: the catch-up of the first session."""
        self.cancelled = asyncio.Event()
        self.asked_meanwhile: int | None = None
        """History requests the adapter had made when that record ended."""

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.event_id != self.slow or self.handing is not None:
            return await super().__call__(inbound)
        self.handing = asyncio.current_task()
        try:
            await asyncio.Event().wait()  # recording, until cancelled
        except asyncio.CancelledError:
            self.cancelled.set()
            with contextlib.suppress(TimeoutError):
                await self.fake.wait_for(lambda: len(self.fake.calls_to(HISTORY)) > 1, timeout=self.wind_down)
            self.asked_meanwhile = len(self.fake.calls_to(HISTORY))
            raise


async def catching_up_when_a_new_session_begins(fake: FakeDiscord, wind_down: float) -> tuple[DiscordAdapter,
                                                                                            SlowToGiveIn]:
    """An adapter whose catch-up is handing a message over when Discord invalidates its session: the
    new session's READY cancels that catch-up while the sink is still recording the message."""
    store, sink = await dm_seen_once(fake)
    slow = SlowToGiveIn(fake, fake.push_dm(USER, "while down"), wind_down)
    adapter = await run(fake, store, slow)
    await fake.wait_for(lambda: slow.handing is not None)
    fake.invalidate_session()
    await slow.cancelled.wait()
    return adapter, slow


def catch_ups() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "discord-catch-up" and not t.done()]


async def test_a_catch_up_a_new_session_cancelled_ends_before_the_new_one_begins(fake: FakeDiscord) -> None:
    adapter, sink = await catching_up_when_a_new_session_begins(fake, wind_down=0.5)
    try:
        await sink.has(fake.push_dm(USER, "after"))  # once the new session's catch-up is done
        assert sink.asked_meanwhile == 1  # the new catch-up asked Discord nothing before the old one ended
        # Handed over by the new one ("after" perhaps live and in its history too: the inbox drops one).
        assert list(dict.fromkeys(e.text for e in sink.events)) == ["while down", "after"]
    finally:
        await stop(adapter)


async def test_stop_right_after_a_new_session_leaves_no_catch_up_behind(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # The old catch-up is still winding down (its sink recording) when the adapter stops: the stop
    # waits for it, rather than leave a task pending that the loop's close would destroy.
    adapter, sink = await catching_up_when_a_new_session_begins(fake, wind_down=0.5)
    await stop(adapter)
    assert sink.handing is not None and sink.handing.done() and catch_ups() == []
    assert sink.events == [] and sink.asked_meanwhile is not None
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
