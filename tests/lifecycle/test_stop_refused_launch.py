"""A stop that reaches the children of a launch the journal has just refused, before that launch's caller has
heard, brings none of them back: the journal writes no row for a child that never existed (listed as
unfinished, holding its correlation id, and marked INTERRUPTED at the next start)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycleError
from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import callers, record
from tests.polling import until


@contextlib.contextmanager
def write_locked(path):
    """Another connection holds the write lock: the journal's commit waits (on the loop: it tries again)."""
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


async def test_a_stop_between_a_failed_launch_commit_and_its_caller_hearing_writes_no_child(env):
    # The stop journaled the child (PENDING, with its reason) after the journal had dropped the launch's
    # records, and the next commit wrote it: a child that never existed, its correlation id held.
    journal = env.service.journal
    await journal.sync()
    (pages,) = journal.db.read_one("PRAGMA page_count")
    journal.db.read(f"PRAGMA max_page_count={pages}")  # SQLite refuses what needs a new page: SQLITE_FULL
    with write_locked(journal.db.path):
        with env.turn():
            launching = asyncio.ensure_future(env.service.launch(SubagentLaunchRequest(goal="x" * 12_000,
                                                                                       correlation_id="job-1")))
        await until(lambda: journal._launches)  # waiting for its commit
    # Queued before the commit's outcome wakes the launch's caller: it runs in between (a /stop, say).
    stopping = asyncio.ensure_future(env.service.host_view().interrupt_children("parent-1", "stopped by /stop"))
    with contextlib.suppress(sqlite3.Error):
        journal.db.commit()  # the launch's commit fails: its records are dropped
    assert await stopping == 1  # it reached the child, still held
    with pytest.raises(SubagentLifecycleError) as refused:
        await launching
    assert refused.value.code == "JOURNAL_WRITE_FAILED"
    journal.db.read("PRAGMA max_page_count=1073741823")  # room again
    await journal.sync()
    assert await journal.unfinished() == [] and await journal.find_correlation("parent-1", "job-1") is None
    assert env.service.host_view().children("parent-1") == ()


async def test_sqlite_a_launch_refused_whole_reads_as_dropped_until_its_caller_hears(tmp_path):
    # What the service's stop path asks (`Journal.launch_dropped`) before it journals a stop of a PENDING child.
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        with write_locked(journal.db.path):
            (launch,) = callers(journal, ([record("sa-b1", "PENDING", correlation_id="job"),
                                           record("sa-b2", "PENDING")], ["sa-b1", "sa-b2"]))
            await until(lambda: journal._launches)
        assert not journal.launch_dropped("sa-b2")  # not decided yet
        journal.db.commit()  # refused whole: sa-b2's row deleted in the same commit
        assert [journal.launch_dropped(sid) for sid in ("sa-b1", "sa-b2", "holder")] == [True, True, False]
        with pytest.raises(JournalError) as info:
            await launch
        assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-b1", "sa-b2")
        assert not journal.launch_dropped("sa-b1") and not journal.launch_dropped("sa-b2")  # heard: forgotten
    finally:
        await journal.close()


async def test_sqlite_a_refused_launch_whose_caller_gave_up_reads_as_dropped_until_it_asks_again(tmp_path):
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("holder", correlation_id="job"))
        await journal.sync()
        with write_locked(journal.db.path):
            (launch,) = callers(journal, ([record("sa-b1", "PENDING", correlation_id="job"),
                                           record("sa-b2", "PENDING")], ["sa-b1", "sa-b2"]))
            await until(lambda: journal._launches)
        journal.db.commit()  # refused whole
        launch.cancel()  # its caller gives up before it wakes to hear it
        with pytest.raises(asyncio.CancelledError):
            await launch
        assert journal.launch_dropped("sa-b2")  # its children are still held until it asks again
        with pytest.raises(JournalError) as info:
            await journal.sync_launch(["sa-b1", "sa-b2"])
        assert info.value.code == "JOURNAL_CONFLICT" and not journal.launch_dropped("sa-b2")
    finally:
        await journal.close()
