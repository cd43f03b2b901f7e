"""GatewayStore: sessions, the inbox and the outbox journal, on one SQLite file shared with the lifecycle journal."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from gateway.store import GatewayStore, NewMessage, SessionRow, StoreError, session_key, split_session_key
from lifecycle import SqliteJournal
from platforms.base import Inbound


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:  # pragma: no cover - the store never sleeps
        raise AssertionError


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    s = GatewayStore(tmp_path / "state.db", clock=clock)
    yield s
    s.close()


def event(event_id: str, text: str = "hi", platform: str = "telegram") -> Inbound:
    return Inbound(platform=platform, chat_id="c1", thread_id=None, user_id="u1", user_name="Ann", text=text,
                   event_id=event_id, is_command=text.startswith("/"), reply_token="tok")


def msg(key: str, text: str = "hello", **kw) -> NewMessage:
    where = (kw.pop("platform", "telegram"), kw.pop("chat_id", "c1"), kw.pop("thread_id", None))
    return NewMessage(key, *where, text, **kw)


# --- file --------------------------------------------------------------------------------


def test_wal_mode_own_schema_version_and_user_version_left_alone(tmp_path):
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0  # the lifecycle journal's to use
    assert db.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()[0] == "2"
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
    store.record_event(event("e1"))
    await journal.save_key("k1", b"secret", 1.0, None)
    await journal.close()
    store.close()
    store, journal = GatewayStore(path), SqliteJournal(path)
    await journal.open()
    assert [e.event_id for e in store.unfinished_events()] == ["e1"]
    assert [k[0] for k in await journal.load_keys()] == ["k1"]
    await journal.close()
    store.close()


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE gateway_meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        GatewayStore(path)


# --- sessions ----------------------------------------------------------------------------


def test_session_key_is_unambiguous():
    assert session_key("slack", "C1", "171.2") == "slack|C1|171.2"
    assert session_key("telegram", "42", None) == "telegram|42|"
    assert session_key("web", "a|b", None) != session_key("web", "a", "b")


def test_sessions_round_trip_across_reopen(tmp_path, clock):
    path = tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    key = session_key("telegram", "42", None)
    assert store.load_session(key) is None
    transcript = [{"role": "user", "content": "héllo \ud800"}, {"role": "assistant", "content": "hi"}]
    store.save_session(SessionRow(key, "s-1", 1, "inline", transcript, created_at=clock.now))
    clock.now += 5
    store.save_transcript(key, [*transcript, {"role": "user", "content": "more"}])
    store.close()

    store = GatewayStore(path, clock=clock)
    row = store.load_session(key)
    assert (row.session_id, row.generation, row.mode) == ("s-1", 1, "inline")
    assert row.transcript[0]["content"] == "héllo \ud800" and len(row.transcript) == 3
    assert row.updated_at == row.created_at + 5
    store.save_session(SessionRow(key, "s-2", 2, "background", []))  # /new
    assert store.load_session(key).mode == "background" and store.load_session(key).transcript == []
    store.close()


def test_a_turn_stores_only_the_messages_it_added(store):
    key = session_key("webhook", "c", None)
    first = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a"}]
    store.save_session(SessionRow(key, "s-1", 1, "inline", first))
    store.save_transcript(key, [*first, {"role": "assistant", "content": "b"}], start=2)
    assert [m["content"] for m in store.load_session(key).transcript] == ["be brief", "a", "b"]
    statements = []
    store._db.set_trace_callback(statements.append)
    store.save_transcript(key, [*first, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}], start=3)
    store._db.set_trace_callback(None)
    inserted = [s for s in statements if "INTO gateway_transcript" in s]
    assert len(inserted) == 1 and '"c"' in inserted[0]  # one new message, not the history again
    store.save_transcript(key, [{"role": "user", "content": "summary"}])  # compaction: from the start
    assert store.load_session(key).transcript == [{"role": "user", "content": "summary"}]


def test_schema_1_transcripts_are_split_into_rows(tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO gateway_meta VALUES ('schema_version', '1');
        CREATE TABLE gateway_sessions (
            key TEXT PRIMARY KEY, session_id TEXT NOT NULL, generation INTEGER NOT NULL, mode TEXT NOT NULL,
            transcript TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
    """)
    transcript = [{"role": "user", "content": "héllo \ud800"}, {"role": "assistant", "content": "hi"}]
    db.execute("INSERT INTO gateway_sessions VALUES ('k', 's-1', 3, 'background', ?, 1.0, 2.0)",
               (json.dumps(transcript),))
    db.commit()
    db.close()
    store = GatewayStore(path)
    row = store.load_session("k")
    assert (row.session_id, row.generation, row.mode, row.transcript) == ("s-1", 3, "background", transcript)
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()[0] == "2"
    assert "transcript" not in [c[1] for c in db.execute("PRAGMA table_info(gateway_sessions)")]
    db.close()


def test_session_keys_split_back_and_recent_threads_are_listed(store, clock):
    for parts in [("slack", "C1", "171.2"), ("telegram", "a|b%c", None), ("web", "x", "t|%7C")]:
        assert split_session_key(session_key(*parts)) == parts
    for i, (chat, thread) in enumerate([("C1", "1.1"), ("C2", None), ("C1", "2.2"), ("C|3", "3.3")]):
        clock.now += 1
        store.save_session(SessionRow(session_key("slack", chat, thread), f"s-{i}", 1, "inline", []))
    store.save_session(SessionRow(session_key("slacker", "C9", "9.9"), "s-9", 1, "inline", []))
    store.save_session(SessionRow(session_key("discord", "C1", "1.1"), "s-8", 1, "inline", []))
    assert store.recent_threads("slack", 10) == [("C1", "1.1"), ("C1", "2.2"), ("C|3", "3.3")]
    assert store.recent_threads("slack", 2) == [("C1", "2.2"), ("C|3", "3.3")]


def test_session_validation(store):
    with pytest.raises(ValueError):
        store.save_session(SessionRow("k", "s", 1, "async", []))  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        store.save_transcript("missing", [])


# --- inbox -------------------------------------------------------------------------------


async def test_durable_returns_once_the_batch_is_committed(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    await store.durable()  # the schema, made inside this running loop, is batched too
    reader = sqlite3.connect(tmp_path / "state.db")
    try:
        assert store.record_event(event("e1"))
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
    store._db = _RefusesOneCommit(store._db)
    try:
        store.record_event(event("e1"))
        with pytest.raises(StoreError, match="committing the state database failed"):
            await store.durable()
        assert store._db.in_transaction  # the batch is still open, its rows kept
        await asyncio.wait_for(store.durable(), 5)  # commits now, rather than wait for a commit never due
        assert not store._db.in_transaction
    finally:
        store.close()
    assert [e.event_id for e in GatewayStore(tmp_path / "state.db").unfinished_events()] == ["e1"]


def test_the_parts_of_a_message_are_journaled_once(store):
    parts = [msg("r:0", "one"), msg("r:1", "two")]
    ids = store.add_new_messages(parts)
    assert ids is not None and len(ids) == 2 and all(ids)
    assert store.add_new_messages(parts) is None  # journaled before: nothing added
    assert store.add_new_messages([msg("r:0", "one, said differently")]) is None
    assert [r.text for r in store.pending_messages()] == ["one", "two"]


def test_inbox_records_once_replays_unfinished_and_forgets_done(store, clock):
    assert store.record_event(event("e1", "first"))
    clock.now += 1
    assert store.record_event(event("e2", "/stop"))
    assert not store.record_event(event("e1", "first"))  # redelivery
    assert store.record_event(event("e1", platform="slack"))  # ids are per platform
    assert store.unfinished_events() == [event("e1", "first"), event("e2", "/stop"), event("e1", platform="slack")]
    store.mark_done("telegram", "e1")
    assert [e.event_id for e in store.unfinished_events()] == ["e2", "e1"]
    assert not store.record_event(event("e1"))  # done events still count as seen


def test_inbox_remembers_the_turn_of_an_event(store):
    store.record_event(event("e1"))
    assert store.event_turn("telegram", "e1") is None
    store.set_event_turn("telegram", "e1", "t-1")
    assert store.event_turn("telegram", "e1") == "t-1"
    assert store.event_turn("telegram", "nope") is None


def test_prune_inbox_forgets_old_ids(store, clock):
    store.record_event(event("old"))
    clock.now += 100
    store.record_event(event("new"))
    assert store.prune_inbox(older_than=clock.now - 50) == 1
    assert store.record_event(event("old"))  # forgotten: taken as new
    assert not store.record_event(event("new"))


# --- outbox ------------------------------------------------------------------------------


def test_add_messages_is_idempotent_per_key(store):
    first = store.add_messages([msg("k:0"), msg("k:1")])
    assert all(isinstance(i, int) for i in first)
    again = store.add_messages([msg("k:0", "other"), msg("k:2")])
    assert again[0] is None and again[1] > first[1]
    assert store.message("k:0").text == "hello"
    assert [r.key for r in store.pending_messages()] == ["k:0", "k:1", "k:2"]
    store.add_messages([msg("t:0", thread_id="th"), msg("o:0", chat_id="c2")])
    assert [r.key for r in store.pending_messages(("telegram", "c1", None))] == ["k:0", "k:1", "k:2"]
    assert [r.key for r in store.pending_messages(("telegram", "c1", "th"))] == ["t:0"]


def test_turn_sequence_numbers_and_turn_messages(store):
    store.add_messages([msg("a:0", "one", turn_id="t1"), msg("a:1", "two", turn_id="t1")])
    store.add_messages([msg("x:0", "other turn", turn_id="t2")])
    store.add_messages([msg("b:0", "three", turn_id="t1", kind="notice")])
    store.add_messages([msg("b:0/a", "piece", turn_id="t1", sequence=0)])
    assert [store.message(k).sequence for k in ("a:0", "a:1", "b:0", "x:0")] == [0, 1, 2, 0]
    rows = store.turn_messages("telegram", "t1")
    assert [(m["key"], m["sequence"], m["text"]) for m in rows] == [
        ("a:0", 0, "one"), ("b:0/a", 0, "piece"), ("a:1", 1, "two"), ("b:0", 2, "three")]
    assert rows[3]["kind"] == "notice" and rows[0]["status"] == "pending" and rows[0]["chat_id"] == "c1"
    store.set_op(store.message("b:0").id, "split")
    assert "b:0" not in [m["key"] for m in store.turn_messages("telegram", "t1")]
    assert store.turn_messages("slack", "t1") == []


def test_state_changes(store, clock):
    ids = store.add_messages([msg("k:0"), msg("k:1"), msg("k:2")])
    store.record_attempt(ids[0], "NetworkError: boom", clock.now + 3)
    row = store.message("k:0")
    assert (row.status, row.attempts, row.next_attempt_at, row.last_error) == (
        "pending", 1, clock.now + 3, "NetworkError: boom")
    store.mark_sent(ids[0], "m1")
    row = store.message("k:0")
    assert (row.status, row.attempts, row.message_id, row.sent_at, row.next_attempt_at) == (
        "sent", 2, "m1", clock.now, None)
    store.mark_failed(ids[1], "Forbidden: blocked")
    assert store.message("k:1").status == "failed"
    assert store.drop([ids[1], ids[2]]) == [ids[2]]  # only pending rows drop
    assert store.message("k:2").status == "dropped"
    store.set_message_id("k:1", "m9")
    assert store.message("k:1").message_id == "m9"
    assert store.pending_messages() == []


def test_pieces_are_the_direct_children_of_a_key(store):
    store.add_messages([msg("k:1"), msg("k:1/a"), msg("k:1/b"), msg("k:1/a/a"), msg("k:10"), msg("k:1x")])
    assert [r.key for r in store.pieces("k:1")] == ["k:1/a", "k:1/b"]
    assert [r.key for r in store.pieces("k:1/a")] == ["k:1/a/a"]


def test_text_with_lone_surrogates_is_stored_exactly(store):
    text = "broken \ud83d emoji and fine 😀"
    store.add_messages([msg("s:0", text, turn_id="t")])
    assert store.message("s:0").text == text
    assert store.turn_messages("telegram", "t")[0]["text"] == text


def test_prune_outbox_keeps_pending_rows(store, clock):
    ids = store.add_messages([msg("old:0"), msg("old:1")])
    store.mark_sent(ids[0], "m1")
    clock.now += 100
    store.add_messages([msg("new:0")])
    assert store.prune_outbox(older_than=clock.now - 50) == 1
    assert store.message("old:0") is None and store.message("old:1") is not None
