"""A session generation's latest delegations are read through an index: ``/agents`` at a chat's top level reads them
for every thread (or topic) session in memory, and a scan of the week of every chat's rows for each held the event
loop for seconds (500 threads, 50,000 rows: 13 s)."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway.store import GatewayStore


def test_latest_of_a_session_generation_reads_no_other_chats_rows(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        db = store.delegations._db._connection()
        said: list[str] = []
        db.set_trace_callback(said.append)
        store.delegations.latest("s-thread", 3)
        db.set_trace_callback(None)
        [query] = [sql for sql in said if "FROM gateway_delegations" in sql]
        plan = " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, plan
    finally:
        store.close()
