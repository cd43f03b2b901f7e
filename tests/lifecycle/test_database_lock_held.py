"""Another process holding the state database's write lock (an `sqlite3` shell after BEGIN IMMEDIATE, a database
browser with a change not saved) for minutes: one wait of ``busy_timeout`` on the event loop, not one per write
(every chat waits with the loop), one ERROR line naming the cause, and everything goes through once it ends."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest

from lifecycle import SqliteDatabase
from tests.lifecycle.test_database import Recorder

BUSY_TIMEOUT = 0.3
HELD = "another process holds its write lock"


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "lifecycle.database"]


async def test_writes_wait_for_a_held_lock_once_then_are_refused_at_once_until_it_is_free(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lifecycle.database")
    db = SqliteDatabase(tmp_path / "s.db", busy_timeout=BUSY_TIMEOUT)
    db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db.write("INSERT INTO t VALUES ('a', 1)")  # waits busy_timeout: a lock may be brief
        started = time.monotonic()
        for i in range(5):
            with pytest.raises(sqlite3.OperationalError, match="locked") as refused:
                db.write("INSERT INTO t VALUES (?, ?)", (f"b{i}", i))
            assert refused.value.sqlite_errorcode == sqlite3.SQLITE_BUSY  # still a lock, which passes
        assert time.monotonic() - started < BUSY_TIMEOUT  # before, 5 x busy_timeout with the loop held
        assert said(caplog) == [("ERROR", f"{db.path}: {HELD} (a transaction left open in an sqlite3 shell or a"
                                          " database browser: BEGIN IMMEDIATE, or a change not committed yet); until"
                                          " it ends, what the gateway must record waits (a message is not"
                                          " acknowledged, its platform sends it again): commit or roll back that"
                                          " transaction, or close the program")]
        other.execute("ROLLBACK")
        db.write("INSERT INTO t VALUES ('a', 1)")
        await db.durable()
        assert db.read("SELECT k, v FROM t") == [("a", 1)]
        assert said(caplog)[1:] == [("INFO", f"{db.path}: the write lock is free again (first found held 0 s ago)")]

        other.execute("BEGIN IMMEDIATE")  # a new hold: waited for, and said, again
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db.write("INSERT INTO t VALUES ('c', 3)")
        assert time.monotonic() - started >= BUSY_TIMEOUT * 0.9
        assert [level for level, _ in said(caplog)] == ["ERROR", "INFO", "ERROR"]
        other.execute("ROLLBACK")
    finally:
        other.close()
        db.close()


async def test_participants_commits_refused_by_a_held_lock_say_so_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lifecycle.database")
    db = SqliteDatabase(tmp_path / "s.db", busy_timeout=BUSY_TIMEOUT)
    db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None)
    recorder = Recorder(db)
    try:
        other.execute("BEGIN IMMEDIATE")
        for i in range(3):
            db.request(recorder)
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await db.durable()
        assert [(level, text.split(" (")[0]) for level, text in said(caplog)] == [("ERROR", f"{db.path}: {HELD}")]
        other.execute("ROLLBACK")
        recorder.pending = [("k", 1)]
        db.request(recorder)
        await db.durable()
        assert recorder.outcomes[-1] is None and db.read("SELECT k, v FROM t") == [("k", 1)]
        assert said(caplog)[-1][1].startswith(f"{db.path}: the write lock is free again")
    finally:
        other.close()
        db.close()
