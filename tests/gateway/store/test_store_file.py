"""The gateway's tables in the state file: WAL, schema versions, a neighbour to the lifecycle journal."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import sqlite3

import pytest

from gateway.store import SCHEMA_VERSION, GatewayStore, StoreError
from lifecycle import SqliteJournal
from tests.gateway.store.conftest import event


def test_wal_mode_own_schema_version_and_user_version_left_alone(tmp_path):
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0  # the lifecycle journal's to use
    assert db.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.execute("CREATE TABLE lifecycle_records (x)")  # a neighbour in the same file
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    GatewayStore(path).close()  # reopens happily


async def test_shares_the_file_with_the_lifecycle_journal_and_creates_the_state_dir(tmp_path):
    path = tmp_path / "state" / "switchboard.db"
    store = GatewayStore(path)
    journal = SqliteJournal(path)  # its own connection, tables and user_version
    await journal.open()
    store.inbox.accept(event("e1"), None).new
    await journal.save_key("k1", b"secret", 1.0, None)
    await journal.close()
    store.close()
    store, journal = GatewayStore(path), SqliteJournal(path)
    await journal.open()
    assert [e.event_id for e in [e for e, _ in store.inbox.unfinished()]] == ["e1"]
    assert [k[0] for k in await journal.load_keys()] == ["k1"]
    await journal.close()
    store.close()


def _made_then_changed(path, sql: str) -> None:
    """A state file as this build makes it, then changed behind its back (an older or newer build)."""
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "state.db"
    _made_then_changed(path, "UPDATE gateway_meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="newer"):
        GatewayStore(path)




async def test_durable_returns_once_the_batch_is_committed(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    await store.durable()  # the schema, made inside this running loop, is batched too
    reader = sqlite3.connect(tmp_path / "state.db")
    try:
        assert store.inbox.accept(event("e1"), None).new
        assert reader.execute("SELECT count(*) FROM gateway_inbox").fetchone()[0] == 0  # batched, not yet durable
        await asyncio.gather(store.durable(), store.durable())  # callers of one loop turn share the commit
        assert reader.execute("SELECT count(*) FROM gateway_inbox").fetchone()[0] == 1
        await store.durable()  # nothing pending: at once
    finally:
        reader.close()
        store.close()


class _RefusesOneCommit:
    """The store's connection, except that the first COMMIT fails (as a full disk would make it)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db, self.refused = db, False

    def execute(self, sql: str, *args):
        if sql == "COMMIT" and not self.refused:
            self.refused = True
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


async def test_a_failed_commit_fails_its_waiters_and_the_next_wait_commits_again(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    await store.durable()
    store.db._conn = _RefusesOneCommit(store.db._conn)
    try:
        store.inbox.accept(event("e1"), None).new
        with pytest.raises(sqlite3.OperationalError, match="disk is full"):
            await store.durable()
        assert not store.db._conn.in_transaction  # rolled back, no batch left open; its rows kept to write again
        await asyncio.wait_for(store.durable(), 5)  # commits now, rather than wait for a commit never due
        assert not store.db._conn.in_transaction
    finally:
        store.close()
    assert [e.event_id for e in [e for e, _ in GatewayStore(tmp_path / "state.db").inbox.unfinished()]] == ["e1"]


def test_a_schema_2_inbox_learns_to_count_attempts_and_keeps_its_events(tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO gateway_meta VALUES ('schema_version', '2');
        CREATE TABLE gateway_inbox (
            platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL,
            received_at REAL NOT NULL, turn_id TEXT, PRIMARY KEY (platform, event_id));
        CREATE INDEX gateway_inbox_open ON gateway_inbox (received_at) WHERE status = 'received';
    """)
    payload = '{"platform": "telegram", "chat_id": "c1", "thread_id": null, "user_id": "u1", "user_name": null,' \
              ' "text": "still here", "event_id": "e1"}'
    db.execute("INSERT INTO gateway_inbox VALUES ('telegram', 'e1', ?, 'received', 1.0, 't-1')", (payload,))
    db.commit()
    db.close()
    store = GatewayStore(path)
    [(event, turn_id)] = store.inbox.unfinished()
    assert (event.text, turn_id) == ("still here", "t-1")
    assert store.inbox.failed("telegram", "e1", "boom") == 1
    store.close()


def test_no_partial_index_of_the_outbox_filters_on_its_platform(tmp_path):
    """SQLite re-plans, on every run, a statement that compares a column with a bound value
    when a partial index's WHERE tests that column: ``WHERE platform = 'web'`` made each
    outbox insert (it looks up its turn's next sequence by ``platform = ?``) three times
    dearer. The outbox's partial indexes may test only ``status``, which no statement binds, or that a column
    IS NOT NULL, which compares no bound value with a constant (``message_id``'s: no dearer)."""
    store = GatewayStore(tmp_path / "state.db")
    partial = store.db.read(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'gateway_outbox' AND sql LIKE '%WHERE%'")
    store.close()
    assert partial  # the pending and failed indexes
    for name, sql in partial:
        condition = sql.split("WHERE", 1)[1].strip()
        assert condition.startswith("status =") or re.fullmatch(r"\w+ IS NOT NULL", condition), (name, condition)


def test_an_earlier_builds_partial_web_chat_index_is_replaced_on_open(tmp_path):
    path = tmp_path / "state.db"
    _made_then_changed(path, "CREATE INDEX gateway_outbox_web_chat ON gateway_outbox (chat_id, id) WHERE platform = 'web'")
    store = GatewayStore(path)
    names = {r[0] for r in store.db.read("SELECT name FROM sqlite_master WHERE tbl_name = 'gateway_outbox'")}
    store.close()
    assert "gateway_outbox_web_chat" not in names and "gateway_outbox_chat" in names


def test_a_schema_7_inbox_takes_its_unsettled_events_as_begun(tmp_path):
    # That build marked no turn begun, and charged each unsettled event for a death: so does the first start after it.
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.inbox.accept(event("e1"), "t-1")
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE gateway_meta SET value='7' WHERE key='schema_version'")
    store = GatewayStore(path)
    try:
        assert store.inbox.begun() == {("telegram", "e1")}
        store.inbox.reopen("telegram", "e1")  # handed back to a start: begun again once its turn begins
        assert store.inbox.begun() == set()
        assert [(e.event_id, turn_id) for e, turn_id in store.inbox.unfinished()] == [("e1", "t-1")]
    finally:
        store.close()


def test_a_state_file_from_before_album_aliases_gets_their_table_and_keeps_its_events(tmp_path):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.inbox.accept(event("e1"), "t-1")
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # as an earlier build of schema 8 left it
        db.execute("DROP TABLE gateway_inbox_aliases")
        db.execute("UPDATE gateway_inbox SET payload = json_remove(payload, '$.aliases')")
    store = GatewayStore(path)
    try:
        assert store.inbox.unfinished() == [(event("e1"), "t-1")]
        album = dataclasses.replace(event("1"), aliases=("1", "2"))
        assert store.inbox.accept(album, "t-2").new
        assert not store.inbox.accept(dataclasses.replace(event("2"), aliases=("2",)), "t-3").new
    finally:
        store.close()
