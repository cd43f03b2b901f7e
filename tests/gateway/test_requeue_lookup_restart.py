"""A part the operator re-queued after it was given up on while its answers were lost is looked up
from when it was first journaled, also by the next process (`OutboxRow.lookup_since`, stored): the
real SlackAdapter against the loopback FakeSlack, and the store's migration of the time's column."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from gateway.outbox import Outbox
from gateway.store import SCHEMA_VERSION, GatewayStore, NewMessage
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.gateway.observing import Lookups
from tests.platforms.slack_client import bot_posts, fake_slack, started_slacks

WAIT = 5.0
LATER = 3600.0
"""How long after the post the operator retries it: well past the minute of clock skew a lookup allows."""


class LaterClock:
    """The system's clocks, the wall clock moved on by ``later`` seconds (an operator who retries an hour on)."""

    def __init__(self) -> None:
        self.later = 0.0

    def time(self) -> float:
        return time.time() + self.later

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


fake = fake_slack()
adapters = started_slacks()


async def given_up_on_after_its_post_went_out(store: GatewayStore, fake: FakeSlack,
                                             adapter: SlackAdapter) -> tuple[Outbox, int]:
    """Slack took the post, its answer was lost, and the outage lasted past give_up_after (the lookup at
    the deadline failed too): the part failed, tried. Returns the outbox, closed (the gateway stops), and
    the part's row id."""
    outbox = Outbox(store.outbox, {"slack": adapter}, give_up_after={"slack": 0.1})
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", "service_unavailable", status=503)
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    assert await outbox.wait_sent("t1:0", timeout=WAIT) is None
    await outbox.close()
    row = store.outbox.message("t1:0")
    assert (row.status, row.tried, len(bot_posts(fake))) == ("failed", True, 1)
    return outbox, row.id


@pytest.mark.parametrize("retried_by", ["stopping_gateway", "store"])
async def test_a_part_retried_before_a_restart_is_looked_up_from_its_first_journaling_and_posted_once(
        tmp_path, fake, adapters, retried_by):
    """The operator's Retry lands as the gateway stops (its outbox closed, the part not sent), or the
    row is re-queued with no gateway running: the next process looks the part up from when it was first
    journaled, an hour before the retry, finds the post, and does not post it again."""
    path, clock = tmp_path / "state.db", LaterClock()
    store1 = GatewayStore(path, clock=clock)
    outbox1, row_id = await given_up_on_after_its_post_went_out(store1, fake, await adapters())
    [post] = bot_posts(fake)
    clock.later = LATER
    if retried_by == "stopping_gateway":
        assert outbox1.retry(row_id)
    else:
        assert store1.outbox.requeue(row_id) is not None
    store1.close()

    store2, lookups = GatewayStore(path, clock=clock), Lookups()
    outbox2 = Outbox(store2.outbox, {"slack": await adapters()}, clock=clock, events=lookups.events)
    await outbox2.start()
    message_id = await outbox2.wait_sent("t1:0", timeout=WAIT)
    await outbox2.close()
    store2.close()
    assert message_id == post["ts"] and [m["ts"] for m in bot_posts(fake)] == [post["ts"]]
    assert len(fake.calls_to("chat.postMessage")) == 1
    assert lookups.outcomes == ["slack:found"]
    lookup = fake.calls_to("conversations.history")[-1]
    assert float(lookup.params["oldest"]) <= float(post["ts"])


def test_a_part_retried_twice_keeps_its_first_journaling_as_where_a_lookup_starts(tmp_path):
    """Given up on again after the first retry (the outage went on), then retried again: the lookup
    starts at the first journaling still, not at the first retry; each retry restarts the give-up clock."""
    clock = LaterClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        [row_id] = store.outbox.add_messages([NewMessage("t1:0", "slack", "C1", None, "the answer", tried=True)])
        first = store.outbox.message_by_id(row_id).created_at
        for retry in (1, 2):
            store.outbox.mark_failed(row_id, "NetworkError: gave up")
            clock.later = retry * LATER
            row = store.outbox.requeue(row_id)
            assert (row.lookup_since, row.first_journaled_at) == (first, first)
            assert row.created_at >= first + retry * LATER
        store.outbox.mark_sent(row_id, "1.0")
        assert store.outbox.message_by_id(row_id).lookup_since == first
    finally:
        store.close()


def test_a_schema_9_file_gains_the_first_journaled_time_and_its_rows_are_looked_up_from_their_own(tmp_path):
    # A build before the column overwrote a re-queued part's journaling time: none is left to start from.
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE gateway_outbox DROP COLUMN first_journaled_at")
    db.execute("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
               " created_at) VALUES ('old:0', 'slack', 'C1', 'reply', 'send', 'given up on', 0, 0, 'failed', 5.0)")
    db.execute("UPDATE gateway_meta SET value='9' WHERE key='schema_version'")
    db.commit()
    db.close()
    clock = LaterClock()
    store = GatewayStore(path, clock=clock)
    try:
        old = store.outbox.message("old:0")
        assert (old.first_journaled_at, old.lookup_since) == (None, 5.0)
        requeued = store.outbox.requeue(old.id)
        assert requeued.lookup_since == 5.0 and requeued.created_at > 5.0
        store.outbox.add_messages([NewMessage("new:0", "slack", "C1", None, "fresh")])
        new = store.outbox.message("new:0")
        assert new.lookup_since == new.created_at
        assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    finally:
        store.close()
