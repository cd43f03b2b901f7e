"""An outbox part keeps whether it is for its command's user alone (`OutboxRow.private`), and an older file learns
to keep it (schema 11) without losing what it holds."""

from __future__ import annotations

import sqlite3

from gateway.store import SCHEMA_VERSION, GatewayStore
from tests.gateway.store.conftest import msg


def test_a_part_for_its_user_alone_is_read_back_so(store):
    store.outbox.add_messages([msg("refused:0", "not you", reply_token="t", private=True), msg("said:0")])
    assert [(r.key, r.private) for r in store.outbox.pending_messages()] == [("refused:0", True), ("said:0", False)]


def test_a_schema_10_file_keeps_its_pending_parts_and_learns_which_are_private(tmp_path):
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE gateway_outbox DROP COLUMN private")  # as a build that kept it in memory made it
    db.execute("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, reply_token, sequence,"
               " status, created_at) VALUES ('old:0', 'discord', '600', 'command', 'send', 'refused', 0, '1:tok', 0,"
               " 'pending', 1.0)")
    db.execute("UPDATE gateway_meta SET value='10' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = GatewayStore(path)
    try:
        [old] = store.outbox.pending_messages()
        assert (old.key, old.reply_token, old.private) == ("old:0", "1:tok", False)  # as that build sent it
        store.outbox.add_messages([msg("new:0", reply_token="2:tok", private=True)])
        assert store.outbox.message("new:0").private
        assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    finally:
        store.close()
