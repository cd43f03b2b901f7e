"""Discord's catch-up reading a channel again, while the adapter runs, after its read failed or its
deadline came first (`platforms.discord_catch_up.reread`, `platforms.rereads`): the real discord.py
client against `FakeDiscord`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms import discord_catch_up
from platforms.base import Outbound
from platforms.fakes.discord import FakeDiscord
from tests.platforms.test_discord_catch_up import (
    CHANNEL,
    GUILD,
    HISTORY,
    USER,
    Sink,
    Store,
    dm_seen_once,
    missed_then_later,
    run,
    stop,
)

ALIKE = "; others failing alike until a read succeeds wait with it (logged at DEBUG)"
"""Ends the warning of the read that found Discord down: the others' failures meanwhile are at DEBUG."""

KINDS = {
    "a 5xx": {"status": 503},  # Discord's "upstream unavailable", which discord.py does not retry
    "no answer at all": {"drop": True, "times": 2},  # aiohttp sends a GET once more by itself
}


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    monkeypatch.setattr("platforms.discord_catch_up.FIRST_RETRY", 0.05)
    async with FakeDiscord() as fake:
        yield fake
    assert fake.errors == []


class Timer:
    """The catch-up's waits before reading again (`platforms.rereads.Timer`), in time the test moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.asked: list[float] = []
        """The waits asked for, in seconds."""
        self._sleeping: list[tuple[float, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        woken = asyncio.get_running_loop().create_future()
        self._sleeping.append((self.now + seconds, woken))
        await woken

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for due, woken in self._sleeping:
            if due <= self.now and not woken.done():
                woken.set_result(None)


def lines(caplog: pytest.LogCaptureFixture, start: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(start)]


async def restarted_with_nothing_new(fake: FakeDiscord, store: Store, sink: Sink) -> None:
    """A next start hands nothing over again: the last message seen moved past what was missed."""
    before = len(sink.events)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "after the restart"))
    finally:
        await stop(adapter)
    assert {e.text for e in sink.events[before:]} == {"after the restart"}  # (live, and perhaps read back too)


@pytest.mark.parametrize("failure", KINDS.values(), ids=list(KINDS))
async def test_a_channel_whose_read_failed_is_read_again_while_the_adapter_runs(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture, failure: dict) -> None:
    # It was left for the next session, which may be the next start, days away, past the day a catch-up reads back.
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, **failure)
    caplog.set_level(logging.INFO, logger="platforms.discord")
    adapter = await run(fake, store, sink)
    try:
        await sink.has(missed)
        await fake.wait_for(lambda: not adapter._last_seen.behind)
    finally:
        await stop(adapter)
    dm = fake.dm_channel(USER)
    assert [e.text for e in sink.events] == ["one", "while down"] and store.seen[dm] == int(missed)
    [failed] = lines(caplog, f"discord: catching up on channel {dm}: the read failed")
    assert failed.levelno == logging.WARNING
    assert failed.getMessage().endswith("; reading it again in 0.05 s, and until it is read" + ALIKE)
    assert [r.levelno for r in lines(caplog, f"discord: catching up on channel {dm}: read at last, after 1 failed")] \
        == [logging.INFO]
    await restarted_with_nothing_new(fake, store, sink)


async def test_a_read_refused_for_the_token_is_read_again_once_discord_takes_it_again_not_before(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 401)
    caplog.set_level(logging.INFO, logger="platforms.discord")
    timer = Timer()
    adapter = await run(fake, store, sink, catch_up_timer=timer)
    dm = fake.dm_channel(USER)
    try:
        await fake.wait_for(lambda: adapter.connection().status == "down")
        # Live messages flow once the catch-up is at its wait for the channel's read again.
        await sink.has(live := fake.push_dm(USER, "live"))
        timer.advance(3600.0)  # past any backoff
        assert timer.asked == []  # no timed read again (it would be refused again): the wait is the token's
        assert len(fake.calls_to(HISTORY)) == 1
        assert store.seen[dm] < int(missed)  # not past what is still to be read
        await adapter.send(Outbound(chat_id=dm, thread_id=None, text="an answer", idempotency_key="k1"))
        await sink.has(missed)
        await fake.wait_for(lambda: not adapter._last_seen.behind)
    finally:
        await stop(adapter)
    assert adapter.connection().status != "down"
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down"]
    assert store.seen[dm] >= int(live)  # past the missed one and what came live (the answer, if read back)
    [failed] = lines(caplog, f"discord: catching up on channel {dm}: the read failed")
    assert failed.getMessage().endswith("; reading it again once Discord takes the bot token again, and until it"
                                        " is read" + ALIKE)
    await restarted_with_nothing_new(fake, store, sink)


async def test_a_long_429_is_waited_out_and_a_read_still_pending_at_a_stop_is_left_for_the_next_start(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    seen_before = dict(store.seen)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 429, retry_after=31)  # discord.py waits out 30 s at most, then raises
    adapter = await run(fake, store, sink)
    dm = fake.dm_channel(USER)
    try:
        await fake.wait_for(lambda: lines(caplog, f"discord: catching up on channel {dm}: the read failed"))
        await sink.has(fake.push_dm(USER, "live"))
    finally:
        await stop(adapter)
    [failed] = lines(caplog, f"discord: catching up on channel {dm}: the read failed")
    assert failed.getMessage().endswith("; reading it again in 31 s (Retry-After), and until it is read")
    assert len(fake.calls_to(HISTORY)) == 1 and store.seen == seen_before
    await missed_then_later(fake, store, sink, missed)
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down", "later"]


async def test_live_messages_in_a_channel_to_read_again_are_not_recorded_as_seen_until_it_is_read(
        fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    # Else a crash before the read again would leave what was missed behind the record, for good.
    monkeypatch.setattr("platforms.discord_catch_up.FIRST_RETRY", 1.0)
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 503)
    adapter = await run(fake, store, sink)
    dm = fake.dm_channel(USER)
    try:
        await sink.has(live := fake.push_dm(USER, "live"))
        assert len(fake.calls_to(HISTORY)) == 1 and store.seen[dm] < int(missed)
        await sink.has(missed)
        await fake.wait_for(lambda: store.seen[dm] == int(live))
    finally:
        await stop(adapter)
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down"]


async def test_a_channel_the_deadline_came_first_for_is_read_again_while_live_messages_flow(
        fake: FakeDiscord) -> None:
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    release = fake.hold(HISTORY)
    adapter = await run(fake, store, sink, catch_up_timeout=0.2)
    try:
        await sink.has(fake.push_dm(USER, "live"))  # after the deadline, before the channel was caught up
        await fake.wait_for(lambda: len(fake.calls_to(HISTORY)) == 2)  # asked again at once: no failure to wait out
        release.set()
        await sink.has(missed)
        await fake.wait_for(lambda: not adapter._last_seen.behind)
    finally:
        await stop(adapter)
    assert list(dict.fromkeys(e.text for e in sink.events)) == ["one", "live", "while down"]
    await restarted_with_nothing_new(fake, store, sink)


async def test_reads_failing_until_what_was_missed_is_too_old_to_answer_are_given_up_for_the_next_start(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    seen_before = dict(store.seen)
    fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 503)
    timer = Timer()
    adapter = await run(fake, store, sink, catch_up_timer=timer)
    dm = fake.dm_channel(USER)
    try:
        await fake.wait_for(lambda: timer.asked)  # the read failed: waiting to read it again
        timer.advance(24 * 3600.0)  # a day on, Discord failing all along
        await fake.wait_for(lambda: lines(caplog, f"discord: channel(s) {dm} not caught up"))
    finally:
        await stop(adapter)
    assert len(fake.calls_to(HISTORY)) == 1 and [e.text for e in sink.events] == ["one"]
    assert lines(caplog, "discord: channel(s)")[0].getMessage() == (
        f"discord: channel(s) {dm} not caught up: their reads failed until what was sent there while the gateway"
        " was down was older than 24 h; looked for again at the next start")
    assert store.seen == seen_before


async def test_a_read_again_stops_where_the_catch_up_began_so_chatter_since_does_not_push_the_missed_ones_out(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # A read takes the newest 100 messages after the last one seen: in a busy channel the chatter that
    # came live while the reads failed crowded what was missed while the gateway was down out of them.
    monkeypatch.setattr("platforms.discord_catch_up.CLOCK_SKEW", 0.0)  # the fake's clock is ours
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True))
    finally:
        await stop(adapter)
    missed = fake.push_guild_message(GUILD, CHANNEL, USER, "while down", mention_bot=True)
    fake.fail_next(HISTORY, 401)  # read again once a call succeeds: when the test says
    adapter = await run(fake, store, sink)
    try:
        await fake.wait_for(lambda: adapter.connection().status == "down")
        for n in range(101):
            chatter = fake.push_guild_message(GUILD, CHANNEL, USER + 1, f"people talking {n}")
        await fake.wait_for(lambda: adapter._last_seen._meanwhile.get(CHANNEL) == int(chatter))
        await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="an answer", idempotency_key="k1"))
        await sink.has(missed)
        await fake.wait_for(lambda: not adapter._last_seen.behind)
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["hi", "while down"]
    assert not [r for r in caplog.records if "any before the newest" in r.getMessage()]


async def dms_seen_once(fake: FakeDiscord, users: range) -> tuple[Store, Sink]:
    """As `dm_seen_once`, with a DM from each of ``users``: the last the most recently active."""
    store, sink = Store(), Sink(fake)
    adapter = await run(fake, store, sink)
    try:
        for user in users:
            await sink.has(fake.push_dm(user, f"one from {user}"))
    finally:
        await stop(adapter)
    return store, sink


OUTAGES = {**KINDS, "the token refused": {"status": 401}}


@pytest.mark.parametrize("failure", OUTAGES.values(), ids=list(OUTAGES))
async def test_once_a_read_fails_for_all_of_discord_the_first_pass_reads_no_other_channel_until_it_answers(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, failure: dict) -> None:
    # Each channel's read went on failing alike (a 500 after discord.py's own five tries, 25 s), so a
    # wide server spent the catch-up's deadline on a Discord that was down, and asked it all the more.
    monkeypatch.setattr("platforms.discord_catch_up.FIRST_RETRY", 1.0)  # the reads again come after the asserts
    users = range(USER, USER + discord_catch_up.LOOKUPS + 2)
    store, sink = await dms_seen_once(fake, users)
    missed = [fake.push_dm(user, f"while down {user}") for user in users]
    calls = failure.get("times", 1)  # to fail one read
    fake.fail_next(HISTORY, **{**failure, "times": calls * discord_catch_up.LOOKUPS})  # the reads that go at once
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    adapter = await run(fake, store, sink)
    try:
        await sink.has(fake.push_dm(USER, "live"))  # once the first pass is over
        assert len(fake.calls_to(HISTORY)) == calls * discord_catch_up.LOOKUPS  # those that went before one failed
        assert len(sink.events) == len(users) + 1
        if failure.get("status") == 401:  # read once Discord takes the token again
            await fake.wait_for(lambda: adapter.connection().status == "down")
            await adapter.send(Outbound(chat_id=fake.dm_channel(USER), thread_id=None, text="an answer",
                                        idempotency_key="k1"))
        for event_id in missed:
            await sink.has(event_id)
        await fake.wait_for(lambda: not adapter._last_seen.behind)
    finally:
        await stop(adapter)
    assert len(fake.calls_to(HISTORY)) == (calls + 1) * discord_catch_up.LOOKUPS + 2  # and then each read once
    assert all(store.seen[fake.dm_channel(user)] >= int(m) for user, m in zip(users, missed))
    quiet = ", ".join(fake.dm_channel(user) for user in reversed(users[:2]))  # the two least recently active
    failed = [r for r in caplog.records if ": the read failed (" in r.getMessage()]
    assert [r.levelno for r in failed] == [logging.WARNING] + (discord_catch_up.LOOKUPS - 1) * [logging.DEBUG]
    assert failed[0].getMessage().endswith(ALIKE)  # one warning for the outage, not one per channel
    assert [r.levelno for r in caplog.records if ": read at last, after 1 failed" in r.getMessage()].count(
        logging.INFO) == 1
    assert [m for m in caplog.messages if " more read at last" in m] == [
        f"discord: catching up: {discord_catch_up.LOOKUPS - 1} more read at last, whose reads failed while Discord was"
        " down (each logged at DEBUG)"]
    assert any(r.getMessage().startswith("discord: the catch-up stopped at a read that failed for all of Discord")
               and r.getMessage().endswith(f"channel(s) {quiet} not looked at yet; what was sent there while the"
                                           " gateway was down is looked for once Discord answers again")
               for r in caplog.records)
    await restarted_with_nothing_new(fake, store, sink)


async def test_a_channel_refused_for_good_does_not_stop_the_first_pass(fake: FakeDiscord) -> None:
    users = range(USER, USER + 3)
    store, sink = await dms_seen_once(fake, users)
    missed = [fake.push_dm(user, f"while down {user}") for user in users]
    fake.fail_next(f"GET /channels/{fake.dm_channel(users[-1])}/messages", 403, code=50001)  # read first
    adapter = await run(fake, store, sink)
    try:
        await sink.has(live := fake.push_dm(USER, "live"))
    finally:
        await stop(adapter)
    assert len(fake.calls_to(HISTORY)) == 3
    taken = list(dict.fromkeys(e.event_id for e in sink.events[len(users):]))  # (live perhaps read back too)
    assert set(taken[:2]) == set(missed[:-1]) and taken[2:] == [live]
