"""SQLite journal launches a refusal or a failed commit fails, and their callers: a launch is refused
whole and alone, and one whose caller was cancelled before it heard is told when it asks again."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import callers, inspect, record
from tests.polling import until


async def test_sqlite_a_launch_with_an_unserialisable_record_is_rejected_whole_and_alone(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path)
    await journal.open()
    try:
        ok, rejected = callers(journal, ([record("sa-a1", "PENDING")], ["sa-a1"]),
                               ([record("sa-b1", "PENDING"), record("sa-b2", "PENDING", result=object())],
                                ["sa-b1", "sa-b2"]))
        await ok
        with pytest.raises(JournalError) as info:
            await rejected
        assert info.value.code == "JOURNAL_REJECTED" and info.value.subagent_ids == ("sa-b1", "sa-b2")
        await journal.sync()  # told once
    finally:
        await journal.close()
    assert inspect(path, "SELECT subagent_id FROM lifecycle_records") == [("sa-a1",)]


async def test_sqlite_a_launch_that_stopped_waiting_hears_its_own_refusal_when_it_asks_again(tmp_path: Path) -> None:
    # Its caller was cancelled before the commit (`Supervisor` asks again): the refusal waits for it,
    # naming only the refused record, as its sibling was committed; a plain sync is not told of it.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        blocker = sqlite3.connect(journal.db.path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the commit must wait for it
        (launch,) = callers(journal, ([record("sa-b1", "PENDING", correlation_id="job"), record("sa-b2", "PENDING")],
                                      ["sa-b1", "sa-b2"]))
        await until(lambda: journal._launches)  # waiting for the commit
        launch.cancel()
        blocker.execute("ROLLBACK")
        blocker.close()
        journal.db.commit()  # before the caller wakes
        with pytest.raises(asyncio.CancelledError):
            await launch
        (other,) = callers(journal, ([record("sa-a1", "PENDING")], ["sa-a1"]))
        await other  # another launch: not its refusal
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-b1", "sa-b2"])
        assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-b1",)
        await journal.sync()  # told once
        assert await journal.get("sa-b1") is None and await journal.get("sa-b2") == record("sa-b2", "PENDING")
    finally:
        await journal.close()


async def test_sqlite_a_launch_that_stopped_waiting_hears_its_own_refusal_though_a_plain_sync_shared_its_commit(
        tmp_path: Path) -> None:
    # A plain sync waiting on the same commit (the publisher of finished children) took the refusal:
    # asked again, the launch was told its refused record was written, and `Supervisor` ended that
    # child INTERRUPTED, whose row the journal refused once more.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        blocker = sqlite3.connect(journal.db.path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the commit must wait for it
        launch, plain = callers(journal, ([record("sa-b1", "PENDING", correlation_id="job"),
                                           record("sa-b2", "PENDING")], ["sa-b1", "sa-b2"]),
                                ([record("sa-done", "SUCCEEDED")], None))
        await until(lambda: journal._launches and len(journal._waiters) == 2)  # both wait for the commit
        launch.cancel()
        blocker.execute("ROLLBACK")
        blocker.close()
        journal.db.commit()  # before the caller wakes
        with pytest.raises(asyncio.CancelledError):
            await launch
        await plain  # not its refusal: the launch asks again
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-b1", "sa-b2"])
        assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-b1",)
        await journal.sync()  # told once
        assert await journal.get("sa-b1") is None and await journal.get("sa-b2") == record("sa-b2", "PENDING")
    finally:
        await journal.close()


async def test_sqlite_a_launch_refused_whole_whose_caller_was_cancelled_before_it_heard_hears_it_again(
        tmp_path: Path) -> None:
    # The commit told the waiter its launch was refused (its rows deleted), but its caller was
    # cancelled before it woke to hear it: asked again, the journal said the records were written,
    # so `Supervisor` ended the children INTERRUPTED and wrote their rows after all.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        blocker = sqlite3.connect(journal.db.path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the commit must wait for it
        (launch,) = callers(journal, ([record("sa-b1", "PENDING", correlation_id="job"), record("sa-b2", "PENDING")],
                                      ["sa-b1", "sa-b2"]))
        await until(lambda: journal._launches)  # waiting for the commit
        blocker.execute("ROLLBACK")
        blocker.close()
        journal.db.commit()  # refuses the launch whole, telling its waiter ...
        launch.cancel()  # ... whose caller is cancelled before it wakes to hear it
        with pytest.raises(asyncio.CancelledError):
            await launch
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-b1", "sa-b2"])
        assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-b1", "sa-b2")
        await journal.sync()  # told once
        assert await journal.get("sa-b1") is None and await journal.get("sa-b2") is None
    finally:
        await journal.close()


async def test_sqlite_a_launch_a_full_disk_refused_whose_caller_was_cancelled_before_it_heard_hears_it_again(
        tmp_path: Path) -> None:
    # As above, for a launch the failed commit dropped: asked again, it was told it was written.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("sa-old"))
        await journal.sync()
        blocker = sqlite3.connect(journal.db.path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the commit must wait for it
        (launch,) = callers(journal, ([record("sa-a1", "PENDING", goal="x" * 50_000)], ["sa-a1"]))
        await until(lambda: journal._launches)  # waiting for the commit
        blocker.execute("ROLLBACK")
        blocker.close()
        (pages,) = journal.db.read_one("PRAGMA page_count")
        journal.db.read(f"PRAGMA max_page_count={pages}")  # the disk is full
        try:
            journal.db.commit()  # drops the launch, telling its waiter ...
        except sqlite3.Error:
            pass
        launch.cancel()  # ... whose caller is cancelled before it wakes to hear it
        with pytest.raises(asyncio.CancelledError):
            await launch
        journal.db.read("PRAGMA max_page_count=1073741823")  # room again
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-a1"])
        assert info.value.code == "JOURNAL_WRITE_FAILED"
        await journal.sync()
        assert await journal.get("sa-a1") is None
    finally:
        await journal.close()
