"""The start's reads of the events waiting to be handled go through the open-events index, not over the week of
handled ones, and hand every waiting event over, oldest first, however they are paged."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import pytest

from gateway.store import GatewayStore
from tests.gateway.store.conftest import event

# The index as builds before this one wrote it: a file they made keeps it (CREATE INDEX IF NOT EXISTS).
OLDER_OPEN_INDEX = """CREATE INDEX gateway_inbox_open ON gateway_inbox (received_at)
        WHERE status IN ('received', 'begun', 'requeued')"""


def waiting_reads(store: GatewayStore) -> list[str]:
    """The statements the start's reads of waiting events run, as run (values bound)."""
    statements: list[str] = []
    store.db._conn.set_trace_callback(statements.append)
    try:
        store.inbox.unfinished(page=1)  # its first page and the next
        store.inbox.begun()
        store.inbox.waiting_by_platform()
        store.inbox.take_requeued(of=["telegram", "slack"])
        store.inbox.take_requeued()
    finally:
        store.db._conn.set_trace_callback(None)
    return [s for s in statements if s.lstrip().upper().startswith("SELECT") and "gateway_inbox" in s]


@pytest.mark.parametrize("older_file", [False, True])
def test_every_read_of_waiting_events_uses_the_open_events_index(tmp_path, older_file):
    if older_file:
        with sqlite3.connect(tmp_path / "state.db") as conn:
            conn.execute("CREATE TABLE gateway_inbox (platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT"
                         " NOT NULL, status TEXT NOT NULL, received_at REAL NOT NULL, turn_id TEXT, attempts INTEGER"
                         " NOT NULL DEFAULT 0, last_error TEXT, PRIMARY KEY (platform, event_id))")
            conn.execute(OLDER_OPEN_INDEX)
    store = GatewayStore(tmp_path / "state.db")
    try:
        store.inbox.accept(event("e1"), "t-1")
        store.inbox.requeue("slack", "e2", json.dumps(event("e2", platform="slack").to_json()), None, 1.0)
        reads = waiting_reads(store)  # the re-queued event read in full too
        assert len(reads) == 7
        plans = {sql: " | ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {sql}")) for sql in reads}
        assert {sql: plan for sql, plan in plans.items() if "USING INDEX gateway_inbox_open" not in plan} == {}
    finally:
        store.close()


def test_unfinished_hands_over_every_waiting_event_in_order_across_pages(store, clock):
    expected, requeued = [], []
    for i in range(23):
        if i % 4 != 0:  # several received at the same moment: their order is the order of their rows
            clock.now += 1
        inbound = event(f"e{i}", f"text {i}", platform=("telegram", "slack")[i % 2])
        store.inbox.accept(inbound, f"t-{i}" if i % 5 else None)
        if i % 3 == 0:
            store.inbox.settle(inbound.platform, inbound.event_id)
        elif i % 7 == 0:
            store.inbox.set_aside(inbound.platform, inbound.event_id)
            store.inbox.requeue(inbound.platform, inbound.event_id, json.dumps(inbound.to_json()), None, clock.now)
            requeued.append((inbound, f"t-{i}"))  # the turn it was accepted with, kept
        else:
            if i % 2:
                store.inbox.begin(inbound.platform, inbound.event_id)
            expected.append((inbound, f"t-{i}" if i % 5 else None))
    assert (len(expected), len(requeued)) == (13, 2)
    for page in (1, 2, 3, 5, 13, 14, 1000):
        assert store.inbox.unfinished(page=page) == expected, page
    assert store.inbox.begun() == {(e.platform, e.event_id) for e, _ in expected if int(e.event_id[1:]) % 2}
    assert store.inbox.waiting_by_platform() == Counter(e.platform for e, _ in [*expected, *requeued])
    assert store.inbox.take_requeued(of=["slack"]) == [(e, t) for e, t in requeued if e.platform == "slack"]
