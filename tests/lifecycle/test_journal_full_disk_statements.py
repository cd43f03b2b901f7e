"""Statements queued for one commit of the SQLite journal (`save_key`, a sweep) when the first of them meets a
full disk: SQLite rolls back the whole batch, so each of them fails, with the disk's error, and none of them is
committed later unasked. The journal took the first failure for that statement's own: the ones after it ran in
a new batch, the commit failed on a missing savepoint (the error its callers were told), and that batch, left
open, was committed by the next commit, with a key whose `save_key` had raised."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import inspect, record


async def test_statements_after_one_that_met_a_full_disk_fail_with_it_and_are_never_committed(tmp_path: Path):
    path = tmp_path / "j.db"
    journal = SqliteJournal(path)
    await journal.open()
    try:
        journal.put(record("sa-old"))
        await journal.sync()
        (pages,) = journal.db.read_one("PRAGMA page_count")
        journal.db.read(f"PRAGMA max_page_count={pages}")  # the disk is full
        journal.put(record("sa-old", "SUCCEEDED"))
        big = asyncio.ensure_future(journal.save_key("k-big", b"x" * 100_000, 1.0, None))
        small = asyncio.ensure_future(journal.save_key("k-small", b"y" * 32, 2.0, None))
        outcomes = await asyncio.gather(big, small, return_exceptions=True)
        for outcome in outcomes:
            assert isinstance(outcome, JournalError) and outcome.code == "JOURNAL_WRITE_FAILED"
            assert "full" in str(outcome)  # was "no such savepoint: flush"
        assert not journal.db._conn.in_transaction  # no batch left open for a later commit
        journal.db.read("PRAGMA max_page_count=1073741823")  # room again
        await journal.sync()  # the record is kept and written
    finally:
        await journal.close()
    assert inspect(path, "SELECT kid FROM lifecycle_keys") == []  # told they failed: neither was committed
    assert inspect(path, "SELECT subagent_id, state FROM lifecycle_records") == [("sa-old", "SUCCEEDED")]
