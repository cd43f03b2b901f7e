"""SQLite journal commits that fail: one SQLite refuses at COMMIT but leaves open, and one a full disk
refuses; the launches in them leave no record and the other writes are kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.capped_writes import run_capped
from tests.lifecycle.journal_records import inspect, record


async def test_sqlite_a_launch_whose_commit_sqlite_refused_but_left_open_is_not_written_by_the_next_commit(
        tmp_path: Path) -> None:
    # A deferred foreign key of the database's other owner fails the shared batch at COMMIT, and SQLite
    # keeps that transaction open. It was left open: the launch was refused (its records dropped), yet
    # they stayed in the open batch and the next commit wrote them, for a restart to call INTERRUPTED.
    db = SqliteDatabase(tmp_path / "shared.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    try:
        db.write("CREATE TABLE parent (id PRIMARY KEY)")
        db.write("CREATE TABLE child (pid REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
        journal.put(record("sa-old"))
        await journal.sync()
        db.read("PRAGMA foreign_keys=ON")
        db.write("INSERT INTO child VALUES (1)")  # violates the key only at COMMIT
        journal.put(record("sa-old", "SUCCEEDED"))  # another child, finishing in the same batch
        journal.put(record("sa-new", "PENDING"))
        with pytest.raises(JournalError) as refused:
            await journal.sync_launch(["sa-new"])
        assert refused.value.code == "JOURNAL_WRITE_FAILED" and "FOREIGN KEY" in str(refused.value)
        db.write("INSERT INTO parent VALUES (1)")  # the next write; it would make the open batch committable
        await journal.sync()
        assert await journal.get("sa-new") is None
    finally:
        await journal.close()
        db.close()
    path = tmp_path / "shared.db"
    assert inspect(path, "SELECT subagent_id, state FROM lifecycle_records") == [("sa-old", "SUCCEEDED")]
    assert (inspect(path, "SELECT count(*) FROM child"), inspect(path, "SELECT id FROM parent")) == ([(0,)], [(1,)])


_COMMIT_MEETS_A_FULL_DISK = """
import asyncio, resource, sqlite3
from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError, JournalRecord
from lifecycle._sqlite_journal import SqliteJournal

async def main():
    db = SqliteDatabase(given["path"])
    journal = SqliteJournal(db=db)
    await journal.open()
    db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    await db.durable()
    # Taken into the page cache at once; the file cannot grow to hold it, so only the COMMIT fails.
    db.write("INSERT INTO t VALUES ('store', ?)", ("y" * 300_000,))
    journal.put(JournalRecord("sa-1", "s", None, "{}", "PENDING", 1.0, 1.0, goal="g"))
    try:
        await journal.sync_launch(["sa-1"])
        launch = "launched"
    except JournalError as exc:
        launch = exc.code
    in_transaction = db._conn.in_transaction
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # room again
    db.write("INSERT INTO t VALUES ('next', 1)")
    await db.durable()
    await journal.close()
    db.close()
    seen = sqlite3.connect(given["path"])
    return [launch, in_transaction, seen.execute("SELECT k, length(v) FROM t ORDER BY k").fetchall(),
            seen.execute("SELECT count(*) FROM lifecycle_records").fetchone()[0]]

result = asyncio.run(main())
"""


def test_sqlite_a_launch_whose_commit_a_full_disk_refused_is_dropped_and_the_rest_written_whole(
        tmp_path: Path) -> None:
    # A real write failure at COMMIT (a child process whose files cannot grow, as on a full disk):
    # SQLite rolls the batch back itself; the launch is refused and nothing of it kept, the store's
    # write is written again whole with the next one, and no batch is left open meanwhile.
    launch, in_transaction, rows, records = run_capped(_COMMIT_MEETS_A_FULL_DISK, limit=200_000,
                                                       path=str(tmp_path / "j.db"))
    assert (launch, in_transaction) == ("JOURNAL_WRITE_FAILED", False)
    assert rows == [["next", 1], ["store", 300_000]] and records == 0


async def test_sqlite_a_refusal_in_a_batch_a_full_disk_refused_is_not_told_again_by_a_later_commit(
        tmp_path: Path) -> None:
    # The failed commit's refusals stayed behind: the next commit with no records of its own told
    # them to a plain sync (and logged them again), though their launch had heard it failed whole.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        (pages,) = journal.db.read_one("PRAGMA page_count")
        journal.db.read(f"PRAGMA max_page_count={pages}")  # the disk is full
        journal.put(record("sa-b1", "PENDING", correlation_id="job"))  # refused, in a batch that fails
        journal.put(record("sa-b2", "PENDING", goal="x" * 50_000))
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-b1", "sa-b2"])
        assert info.value.code == "JOURNAL_WRITE_FAILED"
        journal.db.read("PRAGMA max_page_count=1073741823")  # room again
        await journal.sync()  # nothing of that launch is left to tell
        assert await journal.get("sa-b1") is None and await journal.get("sa-b2") is None
    finally:
        await journal.close()


async def test_sqlite_launches_the_full_disk_refused_leave_no_record_and_other_writes_are_kept(
        tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path)
    await journal.open()
    try:
        journal.put(record("sa-old"))
        await journal.sync()
        (pages,) = journal.db.read_one("PRAGMA page_count")
        journal.db.read(f"PRAGMA max_page_count={pages}")  # the disk is full
        big = "x" * 50_000  # needs pages the full disk cannot give
        journal.put(record("sa-old", "SUCCEEDED", goal=big))  # another child, finishing in the same batch
        journal.put(record("sa-a1", "PENDING", goal=big))
        journal.put(record("sa-a2", "PENDING"))
        first = asyncio.ensure_future(journal.sync_launch(["sa-a1", "sa-a2"]))
        journal.put(record("sa-b1", "PENDING"))
        second = asyncio.ensure_future(journal.sync_launch(["sa-b1"]))
        for launch in (first, second):  # every launch of the refused batch is refused, whole
            with pytest.raises(JournalError) as info:
                await launch
            assert info.value.code == "JOURNAL_WRITE_FAILED" and "database or disk is full" in str(info.value)
        for sid in ("sa-a1", "sa-a2", "sa-b1"):
            assert await journal.get(sid) is None
        journal.db.read("PRAGMA max_page_count=1073741823")  # room again
        await journal.sync()
    finally:
        await journal.close()
    journal = SqliteJournal(path)
    await journal.open()
    try:
        assert await journal.unfinished() == []  # nothing a restart would call INTERRUPTED
        assert await journal.get("sa-old") == record("sa-old", "SUCCEEDED", goal=big)  # kept and written
    finally:
        await journal.close()
