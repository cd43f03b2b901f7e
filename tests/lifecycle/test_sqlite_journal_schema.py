"""The SQLite journal's file: its mode and indexes, journals written by older versions opened with
their rows, and one written by a newer version refused."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lifecycle._journal import JournalError, JournalRecord
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import inspect, record


async def test_sqlite_schema_mode_and_indexes(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        path = tmp_path / "j.db"
        assert await asyncio.to_thread(inspect, path, "PRAGMA journal_mode") == [("wal",)]
        assert await asyncio.to_thread(inspect, path, "PRAGMA user_version") == [(5,)]
        plan = await asyncio.to_thread(
            inspect,
            path,
            "EXPLAIN QUERY PLAN SELECT subagent_id FROM lifecycle_records"
            " WHERE IFNULL(parent_session_id, 0) = IFNULL('s', 0) AND correlation_id = 'c'",
        )
        assert "lifecycle_records_correlation" in str(plan)
    finally:
        await journal.close()


def _old_journal(path: Path, version: int) -> None:
    """A journal as version 1 (before stop requests were kept), 2 (before unsent steers were), 3 (before
    jobs were) or 4 (before inline children were told apart) wrote it."""
    added = ["stop_reason", "steers", "job"][:version - 1]
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"""CREATE TABLE lifecycle_records (
            subagent_id TEXT NOT NULL PRIMARY KEY, parent_session_id TEXT, correlation_id TEXT,
            handle TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
            started_at REAL, completed_at REAL, result TEXT, goal TEXT NOT NULL
            {"".join(f", {column} TEXT" for column in added)})""")
        conn.execute("INSERT INTO lifecycle_records VALUES ('sa-old', 'p', NULL, '{}', 'PENDING', 1.0, 2.0,"
                     f" NULL, NULL, NULL, 'g'{', NULL' * len(added)})")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_sqlite_a_journal_from_before_stops_steers_jobs_or_inline_were_kept_opens_with_its_rows(
        tmp_path: Path, version: int) -> None:
    path = tmp_path / "j.db"
    await asyncio.to_thread(_old_journal, path, version)
    journal = SqliteJournal(path)
    await journal.open()
    # Its children are not taken for inline ones: they are followed on after a restart, as before.
    assert (await journal.get("sa-old")) == JournalRecord("sa-old", "p", None, "{}", "PENDING", 1.0, 2.0, goal="g",
                                                          inline=False)
    journal.put(record("sa-old", stop_reason="stopped by /stop", steers='[{"id": "s1", "text": "hurry"}]',
                       job='{"goal": "g"}'))
    journal.put(record("sa-new", "PENDING", inline=True))
    await journal.close()
    journal = SqliteJournal(path)
    await journal.open()
    try:
        kept = await journal.get("sa-old")
        assert (kept.stop_reason, kept.steers) == ("stopped by /stop", '[{"id": "s1", "text": "hurry"}]')
        assert kept.job == '{"goal": "g"}' and not kept.inline
        assert (await journal.get("sa-new")).inline
        assert await asyncio.to_thread(inspect, path, "PRAGMA user_version") == [(5,)]
    finally:
        await journal.close()


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    await asyncio.to_thread(inspect, path, "PRAGMA user_version = 99")
    with pytest.raises(JournalError, match=f"{path} was written by a newer version") as refused:
        await SqliteJournal(path).open()
    assert refused.value.code == "JOURNAL_TOO_NEW"
