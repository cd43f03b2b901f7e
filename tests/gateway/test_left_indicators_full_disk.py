"""A chat still showing a "working" indicator that the state database refuses to record (a full disk, say):
kept, and recorded once the database takes it, without a restart, so that the next start still looks there."""

from __future__ import annotations

import logging
import sqlite3

from gateway import left_indicators
from gateway.left_indicators import LeftIndicators
from gateway.store import GatewayStore
from tests.polling import until


def refusing_the_record(action: int, table: str | None, *_) -> int:
    """An SQLite authorizer refusing the record alone, as a full disk refuses a write that needs room."""
    if action == sqlite3.SQLITE_INSERT and table == "gateway_indicators_left":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


async def test_a_chat_the_store_refused_to_record_is_recorded_once_it_takes_it(tmp_path, monkeypatch, caplog):
    # Logged and dropped: a stop or a crash before the indicator went left it in the chat for good.
    monkeypatch.setattr(left_indicators, "RETRY", (0.001, 0.01), raising=False)
    store = GatewayStore(tmp_path / "state.db")
    store.db._conn.set_authorizer(refusing_the_record)
    indicators = LeftIndicators(store, {})
    indicators.left("slack", "C1", "1.5")  # Slack refused the placeholder's deletion (a revoked token)
    indicators.left("slack", "C2", None)
    assert store.indicators_left.chats() == set()
    store.db._conn.set_authorizer(None)  # room again
    await until(lambda: store.indicators_left.chats() == {("slack", "C1", "1.5"), ("slack", "C2", None)},
                timeout=5.0)
    refusals = [r.getMessage() for r in caplog.records if r.name == "gateway.app" and r.levelno >= logging.WARNING]
    assert len(refusals) == 1 and "C1" in refusals[0]  # once, not at every try
    await store.durable()
    store.close()
    store = GatewayStore(tmp_path / "state.db")  # the next start's
    try:
        assert store.indicators_left.chats() == {("slack", "C1", "1.5"), ("slack", "C2", None)}
    finally:
        store.close()
