"""The retention sweep: it forgets the old rows it always forgot, and a backlog of them a batch at a
time, the gateway going on between batches."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent.testing import FakeClock
from gateway.retention import INTERVAL_SECONDS
from gateway.testing import RecordingAdapter, make_config

DAY = 24 * 3600.0
SETTLED_OUTBOX = ("sent", "failed", "dropped")
UNSETTLED_INBOX = ("received", "begun", "requeued")


def pile_up(db, ids: range, at: float) -> None:
    """Rows a sweep forgets once old enough, each of ``ids`` dated ``at``: an event handled (an album,
    with an alias) or set aside, a part sent, failed or dropped, a delegation delivered, a conversation
    seen."""
    db.write_many("INSERT INTO gateway_inbox (platform, event_id, payload, status, received_at) VALUES"
                  " ('chat', ?, '{}', ?, ?)", ((f"gone-{i}", ("done", "dead")[i % 2], at + i) for i in ids))
    db.write_many("INSERT INTO gateway_inbox_aliases VALUES ('chat', ?, ?)",
                  ((f"gone-{i}-b", f"gone-{i}") for i in ids))
    db.write_many("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
                  " created_at) VALUES (?, 'chat', 'c', 'reply', 'send', 'an old answer', 0, 0, ?, ?)",
                  ((f"gone-{i}", SETTLED_OUTBOX[i % 3], at + i) for i in ids))
    db.write_many("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                  " dispatched_at, tasks, status, settled_at) VALUES (?, 'chat|c|', 's', 't', ?, '[]', 'delivered', ?)",
                  ((f"gone-{i}", at + i, at + i) for i in ids))
    db.write_many("INSERT INTO gateway_last_seen VALUES ('slack', ?, '1700000000.000001', ?)",
                  ((f"gone-{i}", at + i) for i in ids))


def keep(db, ids: range, at: float) -> None:
    """Rows a sweep keeps however old, each of ``ids`` dated just after ``at + i``: an event not handled
    yet (with an alias), a part still pending, a delegation still running."""
    db.write_many("INSERT INTO gateway_inbox (platform, event_id, payload, status, received_at) VALUES"
                  " ('chat', ?, '{}', ?, ?)", ((f"kept-{i}", UNSETTLED_INBOX[i % 3], at + i + 0.5) for i in ids))
    db.write_many("INSERT INTO gateway_inbox_aliases VALUES ('chat', ?, ?)",
                  ((f"kept-{i}-b", f"kept-{i}") for i in ids))
    db.write_many("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
                  " created_at) VALUES (?, 'chat', 'c', 'reply', 'send', 'not sent yet', 0, 0, 'pending', ?)",
                  ((f"kept-{i}", at + i + 0.5) for i in ids))
    db.write_many("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                  " dispatched_at, tasks, status, settled_at) VALUES (?, 'chat|c|', 's', 't', ?, '[]', 'running', ?)",
                  ((f"kept-{i}", at + i + 0.5, None if i % 2 else at + i + 0.5) for i in ids))


def rows(db) -> dict[str, set[str]]:
    return {"inbox": {r[0] for r in db.read("SELECT event_id FROM gateway_inbox")},
            "aliases": {r[0] for r in db.read("SELECT alias FROM gateway_inbox_aliases")},
            "outbox": {r[0] for r in db.read("SELECT key FROM gateway_outbox")},
            "delegations": {r[0] for r in db.read("SELECT delegation_id FROM gateway_delegations")},
            "last_seen": {r[0] for r in db.read("SELECT conversation FROM gateway_last_seen")}}


@pytest.mark.parametrize(("sweep", "batch"), [("sweep", 3), ("sweep_in_batches", 1), ("sweep_in_batches", 3),
                                              ("sweep_in_batches", 1000)])
async def test_a_sweep_forgets_every_old_settled_row_and_nothing_else(tmp_path, gateways, sweep, batch):
    clock = FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()], clock=clock)
    gateway.retention.batch = batch
    db = gateway.store.db
    old = clock.time() - 40 * DAY  # past every table's retention (a month at most)
    pile_up(db, range(10), old)
    keep(db, range(10), old)  # among the old ones: a batch goes past them
    pile_up(db, range(10, 20), clock.time() - DAY)  # within every table's (a week at least)
    keep(db, range(10, 20), clock.time() - DAY)
    before = rows(db)

    result = getattr(gateway.retention, sweep)()
    assert (await result if sweep == "sweep_in_batches" else result) == (10, 10, 0)
    gone = {f"gone-{i}" for i in range(10)}
    assert rows(db) == {"inbox": before["inbox"] - gone, "aliases": before["aliases"] - {f"{g}-b" for g in gone},
                        "outbox": before["outbox"] - gone, "delegations": before["delegations"] - gone,
                        "last_seen": before["last_seen"] - gone}


async def test_a_sweep_lets_the_gateway_go_on_between_batches(tmp_path, gateways, caplog):
    # The first sweep after a long stop forgot weeks of rows in one statement per table: 200,000
    # outbox rows held the event loop for over a second, every send, heartbeat and turn waiting.
    caplog.set_level(logging.INFO, logger="gateway.retention")
    clock = FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()], clock=clock)
    gateway.retention.batch = 100
    pile_up(gateway.store.db, range(1000), clock.time() - 40 * DAY)
    await gateway.store.durable()
    timeline: list[str] = []
    pruning = ("DELETE FROM gateway_inbox ", "DELETE FROM gateway_outbox ", "DELETE FROM gateway_delegations ",
               "DELETE FROM gateway_last_seen ")
    conn = gateway.store.db._connection()
    conn.set_trace_callback(lambda sql: timeline.append(sql) if sql.startswith((*pruning, "COMMIT")) else None)
    try:
        await clock.until_sleeping(lasting=INTERVAL_SECONDS)
        clock.advance(INTERVAL_SECONDS)  # the gateway's own sweep comes
        async with asyncio.timeout(10):
            while not [r for r in caplog.records if r.name == "gateway.retention"]:
                timeline.append("the gateway went on")
                await asyncio.sleep(0)
    finally:
        conn.set_trace_callback(None)

    [said] = [r.getMessage() for r in caplog.records if r.name == "gateway.retention"]
    assert said == "retention: forgot 1000 inbox rows, 1000 outbox rows, 0 idle sessions"
    batches = [i for i, entry in enumerate(timeline) if entry.startswith(pruning)]
    assert len(batches) == 4 * (1000 // 100 + 1)  # each table's last batch finds fewer than 100 (here none)
    for first, then in zip(batches, batches[1:], strict=False):
        between = timeline[first + 1:then]
        assert "COMMIT" in between and "the gateway went on" in between, timeline[first:then + 1]
