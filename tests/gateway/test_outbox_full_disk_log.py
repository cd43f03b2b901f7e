"""A full disk holding back every chat's reply is told once, by the database, naming the file: the outbox's
chats waiting on it add no line each (docs/gateway.md, "A full disk while running"). The disk's refusal is
SQLite's own: a batch it rolled back that cannot be written again makes every read and write fail, as a
full disk does."""

from __future__ import annotations

import logging
import random
import sqlite3

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from tests.gateway.test_outbox import WAIT, FakeAdapter

CHATS = [f"c{i}" for i in range(200)]


@pytest.mark.timeout(30)
async def test_chats_a_full_disk_holds_back_log_nothing_but_the_databases_one_error(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="gateway.outbox")
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    # Unbounded (`gateway.long_messages`): a long answer's hundreds of rows are what fill the disk here.
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), max_parts=lambda _: 0)
    try:
        await outbox.start()
        (pages,) = state.db.read_one("PRAGMA page_count")
        # Not committed yet (no await): the chats' senders start once the disk is full.
        for chat in CHATS:
            outbox.enqueue("fake", chat, None, f"answer {chat}", kind="reply", key=chat)
        outbox.enqueue("fake", "long", None, "a long answer " * 3000, kind="reply", key="long")
        (grown,) = state.db.read_one("PRAGMA page_count")
        state.db.read(f"PRAGMA max_page_count={grown}")
        with pytest.raises(sqlite3.OperationalError):  # the disk fills: SQLite rolls back every reply with it
            outbox.enqueue("fake", "longer", None, "a longer answer " * 6000, kind="reply", key="longer")
        # Behind the database's back (a read would write the lost batch again first): no room for it now.
        state.db._conn.execute(f"PRAGMA max_page_count={pages}")
        for _ in range(5):  # five minutes of the chats backing off, the disk still full
            await clock.until_sleeping()
            clock.advance(60)
        assert adapter.calls == []
        told = [r for r in caplog.records if r.name == "lifecycle.database" and r.levelno == logging.ERROR
                and "cannot be written" in r.getMessage()]
        assert len(told) == 1 and str(state.path) in told[0].getMessage()
        waits = [r for r in caplog.records if r.name == "gateway.outbox"]
        assert len(waits) >= 2 * len(CHATS)  # every chat tried, and tried again
        assert [r.getMessage() for r in waits if r.levelno > logging.DEBUG or r.exc_info] == []

        state.db._conn.execute("PRAGMA max_page_count=1000000")  # room again
        clock.autojump = True
        clock.advance(60)
        assert await outbox.flush(timeout=WAIT)
        assert sorted(adapter.texts(chat) for chat in CHATS) == sorted([f"answer {chat}"] for chat in CHATS)
        assert state.outbox.message("long:0").status == "sent"
    finally:
        await outbox.close()
        state.close()


async def test_a_store_failure_that_is_no_full_disk_is_still_an_error_with_its_traceback(tmp_path, caplog):
    # A statement's own failure (here a trigger) is not the database's to tell: the outbox says it.
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7))
    try:
        state.db.write("CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_outbox"
                       " BEGIN SELECT RAISE(ABORT, 'refused'); END")
        await outbox.start()
        outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
        await clock.until_sleeping()
        errors = [r for r in caplog.records if r.name == "gateway.outbox" and r.levelno == logging.ERROR]
        assert len(errors) == 1 and errors[0].exc_info is not None and "c1" in errors[0].getMessage()
        state.db.write("DROP TRIGGER refuse")
        clock.autojump = True
        clock.advance(60)
        assert await outbox.flush(timeout=WAIT)
        assert adapter.texts("c1") == ["first"]
    finally:
        await outbox.close()
        state.close()
