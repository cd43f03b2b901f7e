"""`OutboxRows.sent_answer`: whether a platform's message id is one a part went out as (not a command's answer), read
through the partial index ``gateway_outbox_message``, which a state file of an earlier build gets at its next open.
A Discord thread opened on the bot's answer before a restart is the bot's by it (`platforms.discord_opened`)."""

from __future__ import annotations

import sqlite3

from gateway.store import GatewayStore
from tests.gateway.store.conftest import msg


def sent(store: GatewayStore, key: str, message_id: str | None, **kw) -> None:
    [row_id] = store.outbox.add_messages([msg(key, platform=kw.pop("platform", "discord"), **kw)])
    assert row_id is not None
    store.outbox.mark_sent(row_id, message_id)


def test_a_sent_parts_message_id_is_found_on_its_platform_alone(store):
    sent(store, "turn-1:0", "1001")
    sent(store, "turn-1:card:0", "1002", kind="notice")
    sent(store, "turn-2:0", "1003", kind="command")  # a command's answer, a refusal: no thread there is the bot's
    sent(store, "turn-3:0", "1004", platform="slack")
    sent(store, "turn-4:0", None)
    assert [m for m in ("1001", "1002", "1003", "1004", "1005") if store.outbox.sent_answer("discord", m)] == [
        "1001", "1002"]
    assert store.outbox.sent_answer("slack", "1004")


def test_the_lookup_reads_one_index_entry(store):
    db = store.outbox._db._connection()
    said: list[str] = []
    db.set_trace_callback(said.append)
    store.outbox.sent_answer("discord", "1001")
    db.set_trace_callback(None)
    [query] = [sql for sql in said if "FROM gateway_outbox" in sql]
    plan = " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {query}"))
    assert "USING INDEX gateway_outbox_message" in plan, plan


def test_a_state_file_without_the_index_gets_it_at_its_next_open(tmp_path, clock):
    path = tmp_path / "state.db"
    GatewayStore(path, clock=clock).close()
    with sqlite3.connect(path) as db:  # as an earlier build left it
        db.execute("DROP INDEX gateway_outbox_message")
    store = GatewayStore(path, clock=clock)
    try:
        indexes = {r[0] for r in store.db.read("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "gateway_outbox_message" in indexes
    finally:
        store.close()


def test_an_index_built_on_a_table_of_rows_at_an_open_is_said_in_the_log(tmp_path, clock, caplog):
    # Seconds on a large database before the gateway answers anything, /healthz included: told nothing, an operator
    # saw the first start after an upgrade hang.
    path = tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    sent(store, "turn-1:0", "1001")
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX gateway_outbox_message")
    caplog.set_level("INFO", logger="gateway.store")
    GatewayStore(path, clock=clock).close()
    said = [r.getMessage() for r in caplog.records if r.name == "gateway.store"]
    assert said == ["building the state database's index gateway_outbox_message (once, after an upgrade): a large"
                    " database takes a few seconds, and the gateway answers nothing meanwhile"]
    caplog.clear()
    GatewayStore(path, clock=clock).close()  # built: nothing to say
    GatewayStore(tmp_path / "new.db", clock=clock).close()  # nor for an empty table's
    assert [r for r in caplog.records if r.name == "gateway.store"] == []
