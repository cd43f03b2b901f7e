"""An operator's `sqlite3 switchboard.db` left after BEGIN IMMEDIATE (or a database browser with a change not saved)
holds the state database's write lock: messages are refused for their platform to send again, the event loop (every
chat, every platform's connection) is not held for ``busy_timeout`` at each, the log says why once, and after the
lock ends every message is answered once. A real gateway on a real state directory."""

from __future__ import annotations

import logging
import sqlite3
import time

import pytest

from gateway.testing import RecordingAdapter, make_config, settled

BUSY_TIMEOUT = 0.3


async def test_a_held_write_lock_refuses_messages_at_once_says_why_once_and_loses_none(tmp_path, gateways, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT  # the store's 5 s, shortened
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        for i in range(6):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await chat.say(f"m{i}", chat=f"c{i}", event_id=f"e{i}")
        assert time.monotonic() - started < 2 * BUSY_TIMEOUT  # before, 6 x busy_timeout, the loop held throughout
        other.execute("ROLLBACK")
    finally:
        other.close()
    for i in range(6):  # the platforms send them again
        assert not (await chat.say(f"m{i}", chat=f"c{i}", event_id=f"e{i}")).duplicate
    await chat.wait_for(lambda: len(chat.texts("reply")) == 6)
    assert (await chat.say("m0", chat="c0", event_id="e0")).duplicate
    await settled(gateway)
    assert sorted(m.outbound.chat_id for m in chat.messages) == [f"c{i}" for i in range(6)]
    problems = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1 and problems[0].startswith(f"{db.path}: another process holds its write lock ("), problems
    assert any(r.getMessage().startswith(f"{db.path}: the write lock is free again") for r in caplog.records)
