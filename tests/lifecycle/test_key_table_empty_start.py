"""A start over a journal whose handle key table is empty while it still holds children stops, naming the table and
what to do, instead of signing with a fresh key that would leave every journaled handle unknown; a fresh journal
still gets its first key."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent import HookRegistry
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentState
from lifecycle._contract import SubagentLifecycleError
from lifecycle._journal import JournalRecord
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.conftest import FakeClock, make_registry

EMPTY = "the lifecycle journal's handle key table (lifecycle_keys) is empty, but the journal holds children"


def _service(journal) -> AsyncSubagentLifecycle:
    return AsyncSubagentLifecycle(ChildHost(tools=make_registry(), hooks=HookRegistry(), clock=FakeClock()), journal)


def _keys(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT kid, secret, created_at, retired_at FROM lifecycle_keys").fetchall()
    db.close()
    return rows


async def test_an_emptied_key_table_beside_journaled_children_stops_the_start_until_it_is_restored(make_env, tmp_path):
    env = await make_env()
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="quick"))
        await env.service.wait(handle, timeout_seconds=5)
    await env.service.close()
    path = tmp_path / "journal.db"
    backup = _keys(path)
    with sqlite3.connect(path) as db:  # what a partial restore, or a hand edit, can leave
        db.execute("DELETE FROM lifecycle_keys")
    db.close()

    second = _service(SqliteJournal(path))
    with pytest.raises(ValueError) as refused:
        await second.start()
    message = str(refused.value)
    assert message.startswith(EMPTY) and "restore the table from the same backup" in message
    assert not any(secret.hex() in message for _, secret, _, _ in backup)
    with pytest.raises(SubagentLifecycleError):  # closed for good, as any failed start leaves it
        await second.start()
    assert _keys(path) == []  # no fresh key was made, to sign handles the journaled ones would lose to

    with sqlite3.connect(path) as db:  # the table restored from the same backup: every handle reads again
        db.executemany("INSERT INTO lifecycle_keys VALUES (?,?,?,?)", backup)
    db.close()
    env2 = await make_env()
    with env2.turn():
        result = await env2.service.result(handle)
    assert (result.state, result.summary) == (SubagentState.SUCCEEDED, "done: quick")


async def test_a_memory_journal_holding_children_but_no_key_stops_the_start_too() -> None:
    journal = MemoryJournal()
    journal.put(JournalRecord("c1", "parent-1", None, "{}", "SUCCEEDED", 1.0, 2.0, completed_at=2.0))
    with pytest.raises(ValueError, match=r"\(lifecycle_keys\) is empty, but the journal holds children"):
        await _service(journal).start()
    assert await journal.load_keys() == []


@pytest.mark.parametrize("journal", ["memory", "sqlite"])
async def test_a_fresh_journal_gets_its_first_key(journal, tmp_path: Path) -> None:
    service = _service(MemoryJournal() if journal == "memory" else SqliteJournal(tmp_path / "fresh.db"))
    await service.start()
    try:
        assert len(await service.journal.load_keys()) == 1
        assert not await service.journal.holds_records()
    finally:
        await service.close()
