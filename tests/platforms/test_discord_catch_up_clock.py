"""The Discord catch-up when this host's clock is off from Discord's (`platforms.discord_catch_up.DiscordTime`): a
VM resumed or a board booted with a stale time before NTP steps it, a clock set a day ahead. A message's time is in
its snowflake, on Discord's clock, so the catch-up reads its bounds there (the ``Date`` of Discord's answers), never
on ours alone. The real discord.py client on the loopback FakeDiscord, whose answers carry the real time."""

from __future__ import annotations

import logging
import re
import time

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord_catch_up import DiscordTime
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord
from tests.platforms.test_discord_catch_up import HISTORY, USER, Sink, Store, dm_seen_once, run, stop
from tests.platforms.test_discord_rereads import Timer

HOUR = 3600.0

fake = fake_discord()


def clock_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "clock" in r.getMessage() and r.levelno == logging.WARNING]


def off_by(line: str, words: str) -> float:
    """The seconds a clock warning says the host is off by, checked to be worded as Slack's."""
    match = re.fullmatch(rf"discord: this host's clock is (\d+) s {words} Discord's; catching up on Discord's", line)
    assert match, line
    return float(match[1])


async def caught_up_with(fake: FakeDiscord, store: Store, sink: Sink, missed: list[str], off: float) -> Store:
    """A start on a host clock ``off`` seconds from Discord's (ahead, above 0), then a live message: the missed
    ones and the live one are handed over, and the last message seen is the live one."""
    adapter = await run(fake, store, sink, clock=lambda: time.time() + off)
    try:
        for event_id in missed:
            await sink.has(event_id)
        await sink.has(live := fake.push_dm(USER, "now"))
    finally:
        await stop(adapter)
    assert store.seen[fake.dm_channel(USER)] == int(live)
    return store


async def test_a_host_clock_hours_behind_discords_asks_for_what_was_sent_while_down(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # Five hours behind (a VM resumed before NTP set it right): the reads asked for nothing after a snowflake
    # five hours old, so none of what was sent while the gateway was down, and the live message recorded next
    # lost them for good.
    store, sink = await dm_seen_once(fake)
    missed = [fake.push_dm(USER, "while down"), fake.push_dm(USER, "also while down")]
    caplog.set_level(logging.WARNING, logger="platforms.discord")
    await caught_up_with(fake, store, sink, missed, off=-5 * HOUR)
    assert [e.text for e in sink.events] == ["one", "while down", "also while down", "now"]
    [line] = clock_lines(caplog)
    assert off_by(line, "behind") == pytest.approx(5 * HOUR, abs=2)


async def test_a_host_clock_a_day_ahead_of_discords_answers_what_was_sent_while_down(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # A day and an hour ahead: every message read was "older than 24 h", never answered, and recorded as seen.
    store, sink = await dm_seen_once(fake)
    missed = [fake.push_dm(USER, "while down")]
    caplog.set_level(logging.WARNING, logger="platforms.discord")
    await caught_up_with(fake, store, sink, missed, off=25 * HOUR)
    assert [e.text for e in sink.events] == ["one", "while down", "now"]
    assert not [r for r in caplog.records if "older than" in r.getMessage()]
    [line] = clock_lines(caplog)
    assert off_by(line, "ahead of") == pytest.approx(25 * HOUR, abs=2)


async def test_a_right_clock_reads_each_channel_once_and_warns_of_no_clock(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    store, sink = await dm_seen_once(fake)
    missed = [fake.push_dm(USER, "while down")]
    caplog.set_level(logging.WARNING, logger="platforms.discord")
    reads = len(fake.calls_to(HISTORY))
    await caught_up_with(fake, store, sink, missed, off=-5.0)  # a few seconds off: within the margin
    assert len(fake.calls_to(HISTORY)) == reads + 1
    assert not clock_lines(caplog)


async def test_a_channel_read_again_ages_what_it_finds_on_discords_clock(fake: FakeDiscord) -> None:
    # A day and an hour ahead, the first read failed: the read again aged what it found by the host's clock, so
    # the message sent while down was "older than 24 h", never answered.
    store, sink = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 503)
    timer = Timer()
    adapter = await run(fake, store, sink, clock=lambda: time.time() + 25 * HOUR, catch_up_timer=timer)
    try:
        await fake.wait_for(lambda: timer.asked)  # the read failed: waiting to read it again
        timer.advance(timer.asked[0])
        await sink.has(missed)
    finally:
        await stop(adapter)
    assert [e.text for e in sink.events] == ["one", "while down"]


def test_discords_time_counts_on_from_its_latest_date_on_the_monotonic_clock() -> None:
    # Learned from an answer, then the host's clock stepped a day forward: Discord's time does not move with it.
    host, ticks = [1765052160.0 - 2 * 24 * HOUR], [100.0]  # two days behind the Date below
    discord_time = DiscordTime(clock=lambda: host[0], monotonic=lambda: ticks[0])
    assert discord_time.now() == host[0]  # nothing answered yet: the host's
    discord_time.answered({"Date": "Sat, 06 Dec 2025 20:16:00 GMT"})
    host[0] += 24 * HOUR
    ticks[0] += 30.0
    assert discord_time.now() == 1765052160.0 + 30.0
    discord_time.answered({"Date": "Sat Dec  6 20:17:00 2025"})  # the asctime form: in GMT, whatever the host's zone
    assert discord_time.now() == 1765052220.0
    discord_time.answered({})  # no Date: what was learned stays
    assert discord_time.now() == 1765052220.0
    host[0] = 1765052220.5
    discord_time.answered({"Date": "Sat, 06 Dec 2025 20:17:00 GMT"})  # within its second: ours, as it is
    ticks[0] += 2.0
    assert discord_time.now() == 1765052222.5
