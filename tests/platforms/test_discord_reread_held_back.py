"""A channel read again while the adapter runs (`platforms.discord_catch_up.reread`) whose missed message a stop
leaves unrecorded: its last message seen must not move past it. The real discord.py client against `FakeDiscord`."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Inbound
from platforms.fakes.discord import FakeDiscord
from tests.platforms.test_discord_catch_up import HISTORY, USER, Sink, dm_seen_once, missed_then_later, run, stop
from tests.platforms.test_discord_rereads import Timer


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
    assert fake.errors == []


class FullFor(Sink):
    """A gateway whose full database refuses the record of the message ``text`` (SQLite's own refusal) while
    ``full``, and takes the rest."""

    def __init__(self, fake: FakeDiscord, text: str) -> None:
        super().__init__(fake)
        self.text, self.full, self.tries = text, True, 0
        self._db = sqlite3.connect(":memory:", isolation_level=None)
        self._db.execute("CREATE TABLE inbox (text)")
        self._db.execute("PRAGMA max_page_count=2")

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text == self.text and self.full:
            self.tries += 1
            self._db.execute("INSERT INTO inbox VALUES (?)", ("x" * 50_000,))
        await super().__call__(inbound)


async def test_a_missed_message_a_stop_leaves_unrecorded_in_a_read_again_is_not_passed_by_live_ones(
        fake: FakeDiscord) -> None:
    # The read again went on past the message left (the channel held back), was taken for read, and recorded
    # the newest message handed over live meanwhile as the channel's last seen: the next start looked only
    # after it, and the missed message was lost.
    store, _ = await dm_seen_once(fake)
    missed = fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 503)
    timer, sink = Timer(), FullFor(fake, "while down")
    adapter = await run(fake, store, sink, catch_up_timer=timer)
    dm = fake.dm_channel(USER)
    try:
        await sink.has(live := fake.push_dm(USER, "live"))  # recorded, the channel still to be read again
        await fake.wait_for(lambda: timer.asked)
        timer.advance(3600.0)
        await fake.wait_for(lambda: sink.tries >= 1)  # the read again hands the missed message over: refused
    finally:
        await stop(adapter)
    assert int(live) > int(missed) and store.seen[dm] < int(missed)
    sink.full = False
    await missed_then_later(fake, store, sink, missed)
    assert [e.text for e in sink.events if e.event_id == missed] == ["while down"]
