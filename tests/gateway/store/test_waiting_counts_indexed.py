"""The counts of what waits (messages to answer, parts to send) read an index entry per row, never the row: they
serve /healthz's backlog and the console (up to ten times a second). With 100,000 parts pending, a count that read
each part's row for its ``op`` held the event loop 0.3-0.5 s; the first of each platform is one look per platform."""

from __future__ import annotations

import sqlite3

import pytest

from gateway.store import GatewayStore
from tests.gateway.store.conftest import event, msg

ROW_READS = {"Column", "Rowid", "Rewind", "Next", "Prev", "Last", "SeekRowid", "NotExists", "SeekGE", "SeekGT",
             "SeekLE", "SeekLT", "Count"}
"""The opcodes that read through a cursor: on a table's cursor, a row of the table."""


def traced(store: GatewayStore, read) -> tuple[object, list[str]]:
    """What ``read()`` returns, and the SELECTs it ran (values bound)."""
    statements: list[str] = []
    store.db._conn.set_trace_callback(statements.append)
    try:
        value = read()
    finally:
        store.db._conn.set_trace_callback(None)
    return value, [s for s in statements if s.lstrip().upper().startswith("SELECT")]


def plan(store: GatewayStore, sql: str) -> str:
    return " | ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {sql}"))


def rows_read(store: GatewayStore, sql: str) -> list[str]:
    """The steps of ``sql``'s program that read a table's row rather than an index entry: none for a count that
    reads its index alone. (SQLite's plan cannot say: it calls a partial index covering only when the columns of its
    WHERE are in it too.)"""
    program = store.db.read(f"EXPLAIN {sql}")
    roots = {root for (root,) in store.db.read("SELECT rootpage FROM sqlite_master WHERE type='table'")}
    tables = {p1 for _, opcode, p1, p2, *_ in program if opcode == "OpenRead" and p2 in roots}
    return [opcode for _, opcode, p1, *_ in program if p1 in tables and opcode in ROW_READS]


def fill(store: GatewayStore, clock) -> None:
    store.inbox.accept(event("e1"), "t-1")
    clock.now += 1
    store.inbox.accept(event("e2", platform="slack"), "t-2")
    store.inbox.accept(event("e3", platform="slack"), "t-3")
    store.inbox.settle("slack", "e3")  # answered: waits no more
    store.inbox.accept(event("e4", platform="irc"), "t-4")
    clock.now += 1
    store.outbox.add_messages([msg("a:0", platform="irc"), msg("b:0"), msg("c:0", platform="slack"),
                               msg("d:0", platform="slack")])
    split, sent = store.outbox.message("b:0"), store.outbox.message("c:0")
    store.outbox.set_op(split.id, "split")  # its pieces go out in its place
    store.outbox.add_messages([msg("b:0/a"), msg("b:0/b")])
    store.outbox.mark_sent(sent.id, "m1")


@pytest.mark.parametrize("file_before", [False, True])
def test_the_counts_of_what_waits_read_only_their_indexes(tmp_path, clock, file_before):
    if file_before:  # a file from before the indexes: they are made at the next open
        GatewayStore(tmp_path / "state.db", clock=clock).close()
        with sqlite3.connect(tmp_path / "state.db") as conn:
            conn.execute("DROP INDEX gateway_inbox_open_platform")
            conn.execute("DROP INDEX gateway_outbox_unsent")
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        fill(store, clock)
        counts = [traced(store, store.inbox.waiting_by_platform), traced(store, store.outbox.pending_by_platform),
                  traced(store, store.outbox.counts)]
        assert [value for value, _ in counts] == [{"telegram": 1, "slack": 1, "irc": 1},
                                                  {"irc": 1, "slack": 1, "telegram": 2},
                                                  {"pending": 4, "failed": 0}]
        inbox_count, outbox_count, both = (reads for _, reads in counts)
        [pending_count] = [sql for sql in both if "'pending'" in sql]  # the failed ones: a few, read as they were
        for sql, index in [(*inbox_count, "gateway_inbox_open_platform"), (*outbox_count, "gateway_outbox_unsent"),
                           (pending_count, "gateway_outbox_unsent")]:
            assert f"INDEX {index}" in plan(store, sql) and "TEMP B-TREE" not in plan(store, sql), sql
            assert rows_read(store, sql) == [], sql
    finally:
        store.close()


def test_the_first_of_what_waits_is_one_look_per_platform(store, clock):
    fill(store, clock)
    assert store.inbox.first_waiting(()) is None and store.outbox.first_pending(()) is None
    start = clock.now - 2
    assert store.inbox.first_waiting(("slack", "telegram")) == start
    assert store.inbox.first_waiting(("slack", "matrix")) == start + 1
    assert store.inbox.first_waiting(("matrix",)) is None
    first = store.outbox.message("d:0")  # c:0 went out, b:0 was split: its first piece came later
    assert store.outbox.first_pending(("slack", "telegram")) == (first.id, first.created_at)
    assert store.outbox.first_pending(("irc",)) == (store.outbox.message("a:0").id, start + 2)
    assert store.outbox.first_pending(("matrix",)) is None
    for read in (lambda: store.inbox.first_waiting(("slack", "telegram")),
                 lambda: store.outbox.first_pending(("slack", "telegram"))):
        [sql] = traced(store, read)[1]
        steps = plan(store, sql)
        # However many rows wait, of those platforms or of others: no scan of them, no sort.
        assert "SCAN gateway_" not in steps and "TEMP B-TREE" not in steps, steps
        assert steps.count("(platform=?)") == 2, steps
