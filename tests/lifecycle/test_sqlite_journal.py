"""The SQLite journal beyond the conformance suite: on a database another owner shares, a write
lock held by another connection, a closed journal or database, records SQLite cannot hold, and a
process killed after a sync."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest

from lifecycle import _sqlite_journal as sqlite_journal
from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError, JournalRecord
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import inspect, record


async def test_sqlite_journal_rows_and_the_owners_writes_share_one_commit(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    db.write("CREATE TABLE neighbour (x)")
    await db.durable()
    before = db.commits
    db.write("INSERT INTO neighbour VALUES (1)")
    journal.put(record("sa-1"))
    await asyncio.gather(journal.sync(), db.durable())
    assert db.commits == before + 1
    await journal.close()
    assert not db.closed  # the owner closes it
    assert await asyncio.to_thread(inspect, db.path, "SELECT count(*) FROM lifecycle_records") == [(1,)]
    db.close()


async def test_sqlite_sweep_forgets_a_batch_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One DELETE for every old record held the event loop, which runs the statements, for seconds on the first
    # sweep after a long stop. Each batch is a commit of its own now, the loop free between.
    monkeypatch.setattr(sqlite_journal, "SWEEP_BATCH", 3, raising=False)
    db = SqliteDatabase(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    for i in range(10):
        journal.put(record(f"old-{i}", "SUCCEEDED", completed_at=float(i)))
        if i % 4 == 0:  # kept ones among them, which every batch steps over
            journal.put(record(f"live-{i}", "RUNNING", completed_at=float(i)))
    journal.put(record("recent", "FAILED", completed_at=50.0))
    await journal.sync()
    before = db.commits
    assert await journal.sweep(completed_before=20.0) == 10
    assert db.commits - before == 4  # 3 + 3 + 3 + 1
    left = await asyncio.to_thread(inspect, db.path, "SELECT subagent_id FROM lifecycle_records ORDER BY 1")
    assert left == [("live-0",), ("live-4",), ("live-8",), ("recent",)]
    await journal.close()
    db.close()


async def test_sqlite_never_blocks_the_loop_on_another_connections_lock(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path)
    await journal.open()
    store = sqlite3.connect(path, isolation_level=None)  # a neighbour holding a batch open across a loop turn
    try:
        store.execute("BEGIN IMMEDIATE")
        asyncio.get_running_loop().call_later(0.05, store.execute, "COMMIT")
        journal.put(record("sa-1"))
        await asyncio.wait_for(journal.sync(), 1.0)  # a blocked loop could not have run that COMMIT
        await journal.save_key("k1", b"s" * 32, 1.0, None)
    finally:
        store.close()
        await journal.close()


async def test_sqlite_closed_journal_refuses_puts_and_close_is_idempotent(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    with pytest.raises(JournalError):
        journal.put(record("early"))
    await journal.open()
    await journal.close()
    await journal.close()
    with pytest.raises(JournalError) as info:
        journal.put(record("late"))
    assert info.value.code == "JOURNAL_CLOSED"


async def test_sqlite_a_failed_flush_keeps_records_and_sync_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path, busy_timeout=0.05)
    await journal.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the journal's flush must fail
        journal.put(record("sa-1"))
        with pytest.raises(JournalError) as info:
            await journal.sync()
        assert info.value.code == "JOURNAL_WRITE_FAILED" and isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert "will retry" in caplog.text
        journal.put(record("sa-2"))
        assert await journal.get("sa-1") == record("sa-1")  # kept, still readable
        blocker.execute("ROLLBACK")
        await journal.sync()  # the retry succeeds
    finally:
        blocker.close()
    journal = SqliteJournal(path)
    await journal.open()
    try:
        assert await journal.get("sa-1") == record("sa-1") and await journal.get("sa-2") == record("sa-2")
    finally:
        await journal.close()


async def test_sqlite_unserialisable_records_are_refused_loudly_and_alone(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("bad", result=object()))
        journal.put(record("good"))
        with pytest.raises(JournalError) as info:
            await journal.sync()
        assert info.value.code == "JOURNAL_REJECTED" and info.value.subagent_ids == ("bad",)
        assert await journal.get("good") == record("good") and await journal.get("bad") is None
    finally:
        await journal.close()


async def test_sqlite_sync_does_not_hang_when_its_database_is_closed_under_it(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    db.close()  # as its owner (the gateway's store) would on the way out
    journal.put(record("sa-1"))
    with pytest.raises(JournalError):
        await asyncio.wait_for(journal.sync(), 5)
    with pytest.raises(JournalError):
        await journal.close()  # still finishes


CRASHING_WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from lifecycle._journal import JournalRecord
    from lifecycle._sqlite_journal import SqliteJournal

    async def main(path):
        journal = SqliteJournal(path)
        await journal.open()
        for i in range(2000):
            journal.put(JournalRecord(f"sa-{i}", "p", f"c-{i}", '{"i": %d}' % i, "RUNNING", 1.0, 2.5, goal="g"))
        await journal.sync()
        for i in range(2000, 4000):  # not synced: may or may not survive, must not corrupt
            journal.put(JournalRecord(f"sa-{i}", "p", None, '{"i": %d}' % i, "RUNNING", 1.0, 2.5))
        await asyncio.sleep(0)
        print("synced", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_sqlite_synced_records_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CRASHING_WRITER, str(path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert out == b"synced\n" and proc.returncode == -signal.SIGKILL
    journal = SqliteJournal(path)
    await journal.open()
    try:
        for i in range(2000):
            assert await journal.get(f"sa-{i}") == JournalRecord(f"sa-{i}", "p", f"c-{i}", '{"i": %d}' % i, "RUNNING", 1.0, 2.5, goal="g")
        assert await journal.find_correlation("p", "c-1999") == "sa-1999"
    finally:
        await journal.close()
    assert await asyncio.to_thread(inspect, path, "PRAGMA integrity_check") == [("ok",)]
