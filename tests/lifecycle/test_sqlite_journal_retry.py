"""What a failed SQLite journal commit leaves behind: the statements queued for it are answered, and
the records it kept are written on their own once the database takes them again, not at some later
put that an idle gateway may never make."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import inspect, record
from tests.polling import until


def _disk_full(journal: SqliteJournal) -> None:
    (pages,) = journal.db.read_one("PRAGMA page_count")
    journal.db.read(f"PRAGMA max_page_count={pages}")


def _room_again(journal: SqliteJournal) -> None:
    journal.db.read("PRAGMA max_page_count=1073741823")


async def test_a_statement_queued_for_a_commit_whose_records_fail_hears_the_failure(tmp_path: Path) -> None:
    # The records' upsert met a full disk before the flush reached the queued statement: it stayed
    # queued, unanswered, and `rotate_key` (or the sweeper, in `sweep`) waited until some later put.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("sa-1"))
        await journal.sync()
        _disk_full(journal)
        journal.put(record("sa-1", "SUCCEEDED", goal="x" * 50_000))
        key = asyncio.ensure_future(journal.save_key("k1", b"s" * 32, 1.0, None))
        with pytest.raises(JournalError) as info:
            await asyncio.wait_for(key, 5)
        assert info.value.code == "JOURNAL_WRITE_FAILED"
        _room_again(journal)
        await journal.save_key("k1", b"s" * 32, 1.0, None)  # asked again, it is written
        assert [row[0] for row in await journal.load_keys()] == ["k1"]
    finally:
        await journal.close()


async def test_records_a_failed_commit_kept_are_written_on_their_own_once_there_is_room(tmp_path: Path) -> None:
    # A finished child's result is readable though its row failed to commit: until the row is written,
    # a crash takes the result back. Nothing else is put (an idle gateway): the row must not wait for that.
    path = tmp_path / "j.db"
    db = SqliteDatabase(path, lost_retry=(0.01, 0.05))
    journal = SqliteJournal(db=db)
    await journal.open()
    try:
        journal.put(record("sa-1"))
        await journal.sync()
        _disk_full(journal)
        journal.put(record("sa-1", "SUCCEEDED", goal="x" * 50_000))
        with pytest.raises(JournalError):
            await journal.sync()
        await asyncio.sleep(0.03)  # a try or two while the disk is still full: they fail, and back off
        assert inspect(path, "SELECT state FROM lifecycle_records") == [("RUNNING",)]
        _room_again(journal)
        await until(lambda: inspect(path, "SELECT state FROM lifecycle_records") == [("SUCCEEDED",)], 5)
    finally:
        await journal.close()
        db.close()


async def test_no_retry_outlives_a_closed_journal(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "j.db", lost_retry=(0.01, 0.05))
    journal = SqliteJournal(db=db)
    await journal.open()
    journal.put(record("sa-1"))
    await journal.sync()
    _disk_full(journal)
    journal.put(record("sa-1", "SUCCEEDED", goal="x" * 50_000))
    with pytest.raises(JournalError):
        await journal.sync()
    with pytest.raises(JournalError):
        await journal.close()  # still full: its flush fails, and it closes all the same
    assert journal._retry is None
    db.close()
