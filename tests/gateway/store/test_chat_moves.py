"""Chats a platform gave a new id, kept across restarts and brought to older state files."""

from __future__ import annotations

import sqlite3

from gateway.store import SCHEMA_VERSION, GatewayStore


def test_moves_are_kept_per_platform_and_survive_a_reopen(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    store.chat_moves.record("telegram", "-4001", "-1001")
    store.chat_moves.record("telegram", "-4002", "-1002")
    store.chat_moves.record("other", "-4001", "elsewhere")
    store.close()
    store = GatewayStore(tmp_path / "state.db")
    assert store.chat_moves.of("telegram") == {"-4001": "-1001", "-4002": "-1002"}
    assert store.chat_moves.of("slack") == {}
    store.chat_moves.record("telegram", "-4001", "-1001")  # told again (both service messages tell)
    assert store.chat_moves.of("telegram")["-4001"] == "-1001"
    store.close()


def test_a_schema_4_file_keeps_its_sessions_and_learns_to_keep_moves(tmp_path):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE gateway_chat_moves")
    db.execute("INSERT INTO gateway_sessions VALUES ('telegram|-4001|', 's-1', 1, 'inline', 1.0, 2.0, 'default', NULL)")
    db.execute("UPDATE gateway_meta SET value='4' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = GatewayStore(path)
    assert store.sessions.load("telegram|-4001|").session_id == "s-1"
    store.chat_moves.record("telegram", "-4001", "-1001")
    assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    store.close()
