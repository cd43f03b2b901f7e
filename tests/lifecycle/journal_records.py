"""What the journal tests share: a record as the lifecycle writes one, callers putting records and
syncing as the lifecycle's do, and a read of a journal's SQLite file from a connection of its own."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

from lifecycle._journal import Journal, JournalRecord


def record(subagent_id: str, state: str = "RUNNING", **changes: Any) -> JournalRecord:
    base = JournalRecord(
        subagent_id=subagent_id,
        parent_session_id="session-1",
        correlation_id=None,
        handle=json.dumps({"contract_version": 1, "subagent_id": subagent_id, "created_at": 0.1 + 0.2}),
        state=state,
        created_at=1_700_000_000.123456,
        updated_at=1_700_000_001.5,
        goal="Check the build",
    )
    if state in ("SUCCEEDED", "FAILED", "INTERRUPTED", "CANCELLED"):
        base = dataclasses.replace(base, completed_at=50.0, result=json.dumps({"state": state, "summary": "ok", "n": [1, 2.5]}))
    return dataclasses.replace(base, **changes)


def callers(journal: Journal, *calls: tuple[list[JournalRecord], list[str] | None]) -> list[asyncio.Future]:
    """Each call as its own caller, as `Supervisor.submit` makes one: it puts its records, then
    waits in ``sync_launch(ids)`` (``sync()`` for None). All put in one loop turn: one commit."""

    async def one(records: list[JournalRecord], ids: list[str] | None) -> None:
        for rec in records:
            journal.put(rec)
        await (journal.sync() if ids is None else journal.sync_launch(ids))

    return [asyncio.ensure_future(one(records, ids)) for records, ids in calls]


def inspect(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
