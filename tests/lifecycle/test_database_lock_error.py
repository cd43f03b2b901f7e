"""A participants' commit that waited past ``busy_timeout`` for another connection's write lock raises
SQLite's own error: its code (SQLITE_BUSY) is what callers tell a passing lock from a bug by."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lifecycle import SqliteDatabase
from platforms.not_recorded import NotYetDurable, storage_refusal
from tests.lifecycle.test_database import Recorder


async def test_a_participants_commit_refused_by_a_lock_raises_sqlites_busy_error(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "s.db", busy_timeout=0.05)
    db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # held past busy_timeout: no batch of ours can begin
        recorder = Recorder(db)
        recorder.pending = [("k", 1)]
        db.request(recorder)
        with pytest.raises(sqlite3.OperationalError, match="locked") as refused:
            await db.durable()
        assert (refused.value.sqlite_errorcode, refused.value.sqlite_errorname) == (sqlite3.SQLITE_BUSY,
                                                                                     "SQLITE_BUSY")
        assert storage_refusal(refused.value)  # a lock passes: tried again, not a failed attempt
        assert storage_refusal(NotYetDurable.of(refused.value))
        assert recorder.outcomes == [refused.value]
        other.execute("ROLLBACK")
        await db.durable()  # the participant's rows wait for the next commit it asks for
        recorder.pending = [("k", 2)]
        db.request(recorder)
        await db.durable()
        assert recorder.outcomes[-1] is None
    finally:
        other.close()
        db.close()
