"""Whether a sender has a message held in the store for a chat: one index look-up, however many are held."""

from __future__ import annotations

import json
import sqlite3

from gateway.store import GatewayStore
from tests.gateway.store.conftest import event


def hold(store: GatewayStore, run: str, key: str, user_id: str, n: int = 1) -> None:
    for i in range(n):
        inbound = event(f"{user_id}-{i}")
        data = {"kind": "message", "text": "hi", "turn_id": "t", "event": {**inbound.to_json(), "user_id": user_id}}
        store.sessions.hold(run, key, json.dumps(data))


def test_held_from_names_only_the_chats_and_runs_senders(store):
    hold(store, "run-1", "chat|a|", "u1", 3)
    hold(store, "run-1", "chat|a|", "Zoë ✓")
    hold(store, "run-0", "chat|a|", "u2")  # an earlier process's: handed over anew from the inbox
    hold(store, "run-1", "chat|b|", "u3")
    assert store.sessions.holds_from("run-1", "chat|a|", "u1")
    assert store.sessions.holds_from("run-1", "chat|a|", "Zoë ✓")  # JSON escapes it; SQLite reads it back
    assert not store.sessions.holds_from("run-1", "chat|a|", "u2")
    assert not store.sessions.holds_from("run-1", "chat|a|", "u3")
    store.sessions.release([seq for seq, _ in store.sessions.held("run-1", "chat|a|")])
    assert not store.sessions.holds_from("run-1", "chat|a|", "u1")


def test_held_from_reads_its_index_which_an_older_file_gets_on_open(tmp_path):
    with sqlite3.connect(tmp_path / "state.db") as conn:  # as builds before the index made it
        conn.execute("CREATE TABLE gateway_held (seq INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL,"
                     " key TEXT NOT NULL, item TEXT NOT NULL)")
        conn.execute("INSERT INTO gateway_held (run, key, item) VALUES ('run-0', 'k', 'not JSON: a hand edit')")
    store = GatewayStore(tmp_path / "state.db")  # a row that is no JSON does not keep it from opening
    try:
        hold(store, "run-1", "k", "u1", 50)
        statements: list[str] = []
        store.db._conn.set_trace_callback(statements.append)
        assert store.sessions.holds_from("run-1", "k", "u1")
        store.db._conn.set_trace_callback(None)
        [sql] = [s for s in statements if "gateway_held" in s]
        plan = " ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {sql}"))
        assert "gateway_held_user" in plan and "=?" in plan.split("gateway_held_user")[1], plan
        assert store.sessions.forget_held("run-1", 10) == 1  # the row that is no JSON goes as the others do
    finally:
        store.close()
