"""Sessions and their transcripts, a row per message."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest

from gateway.store import SCHEMA_VERSION, GatewayStore, SessionRow, session_key, split_session_key


def test_session_key_is_unambiguous():
    assert session_key("slack", "C1", "171.2") == "slack|C1|171.2"
    assert session_key("telegram", "42", None) == "telegram|42|"
    assert session_key("web", "a|b", None) != session_key("web", "a", "b")


def test_sessions_round_trip_across_reopen(tmp_path, clock):
    path = tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    key = session_key("telegram", "42", None)
    assert store.sessions.load(key) is None
    transcript = [{"role": "user", "content": "héllo \ud800"}, {"role": "assistant", "content": "hi"}]
    store.sessions.save(SessionRow(key, "s-1", 1, "inline", transcript, created_at=clock.now))
    clock.now += 5
    store.sessions.save_transcript(key, [*transcript, {"role": "user", "content": "more"}])
    store.close()

    store = GatewayStore(path, clock=clock)
    row = store.sessions.load(key)
    assert (row.session_id, row.generation, row.mode) == ("s-1", 1, "inline")
    assert row.transcript[0]["content"] == "héllo \ud800" and len(row.transcript) == 3
    assert row.updated_at == row.created_at + 5
    store.sessions.save(SessionRow(key, "s-2", 2, "background", []))  # /new
    assert store.sessions.load(key).mode == "background" and store.sessions.load(key).transcript == []
    store.close()


def test_a_turn_stores_only_the_messages_it_added(store):
    key = session_key("webhook", "c", None)
    first = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a"}]
    store.sessions.save(SessionRow(key, "s-1", 1, "inline", first))
    store.sessions.save_transcript(key, [*first, {"role": "assistant", "content": "b"}], start=2)
    assert [m["content"] for m in store.sessions.load(key).transcript] == ["be brief", "a", "b"]
    statements = []
    store.db._conn.set_trace_callback(statements.append)
    store.sessions.save_transcript(key, [*first, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}], start=3)
    store.db._conn.set_trace_callback(None)
    inserted = [s for s in statements if "INTO gateway_transcript" in s]
    assert len(inserted) == 1 and '"c"' in inserted[0]  # one new message, not the history again
    store.sessions.save_transcript(key, [{"role": "user", "content": "summary"}])  # compaction: from the start
    assert store.sessions.load(key).transcript == [{"role": "user", "content": "summary"}]


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
    row = store.sessions.load("k")
    assert (row.session_id, row.generation, row.mode, row.transcript) == ("s-1", 3, "background", transcript)
    assert (row.backend, row.backend_choice) == ("default", None)
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert "transcript" not in [c[1] for c in db.execute("PRAGMA table_info(gateway_sessions)")]
    db.close()


@pytest.mark.parametrize("version", ["2", "3"])
def test_older_sessions_get_the_default_backend_and_keep_a_choice_across_reopens(tmp_path, version):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript(f"""
        CREATE TABLE gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO gateway_meta VALUES ('schema_version', '{version}');
        CREATE TABLE gateway_sessions (
            key TEXT PRIMARY KEY, session_id TEXT NOT NULL, generation INTEGER NOT NULL, mode TEXT NOT NULL,
            created_at REAL NOT NULL, updated_at REAL NOT NULL);
        INSERT INTO gateway_sessions VALUES ('k', 's-1', 2, 'inline', 1.0, 2.0);
    """)
    db.close()
    store = GatewayStore(path)
    row = store.sessions.load("k")
    assert (row.session_id, row.generation, row.backend, row.backend_choice) == ("s-1", 2, "default", None)
    assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    store.sessions.save_backend("k", "model_map", "model_map")
    store.close()
    store = GatewayStore(path)
    row = store.sessions.load("k")
    assert (row.backend, row.backend_choice) == ("model_map", "model_map")
    store.sessions.save(dataclasses.replace(row, generation=3, backend="profile_routes"))
    assert store.sessions.load("k").backend == "profile_routes"
    with pytest.raises(KeyError):
        store.sessions.save_backend("nobody", "default", None)
    store.close()


def test_session_keys_split_back_and_recent_threads_are_listed(store, clock):
    for parts in [("slack", "C1", "171.2"), ("telegram", "a|b%c", None), ("web", "x", "t|%7C")]:
        assert split_session_key(session_key(*parts)) == parts
    said = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    for i, (chat, thread) in enumerate([("C1", "1.1"), ("C2", None), ("C1", "2.2"), ("C|3", "3.3")]):
        clock.now += 1
        store.sessions.save(SessionRow(session_key("slack", chat, thread), f"s-{i}", 1, "inline", said))
    store.sessions.save(SessionRow(session_key("slack", "C1", "4.4"), "s-7", 1, "inline", []))  # commands only
    store.sessions.save(SessionRow(session_key("slacker", "C9", "9.9"), "s-9", 1, "inline", said))
    store.sessions.save(SessionRow(session_key("discord", "C1", "1.1"), "s-8", 1, "inline", said))
    assert store.sessions.recent_threads("slack", 10) == [("C1", "1.1"), ("C1", "2.2"), ("C|3", "3.3")]
    assert store.sessions.recent_threads("slack", 2) == [("C1", "2.2"), ("C|3", "3.3")]


def test_session_validation(store):
    with pytest.raises(ValueError):
        store.sessions.save(SessionRow("k", "s", 1, "async", []))  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        store.sessions.save_transcript("missing", [])
