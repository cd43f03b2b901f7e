"""The journal's ask for a commit (`SqliteDatabase.request`) failing: a launch waiting on it is refused and leaves
no row for a later commit to write, and a statement queued meanwhile is answered, never left waiting."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agent import AgentSession, HookRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, SubagentLaunchRequest, SubagentState
from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.conftest import FakeClock, child_script, make_registry
from tests.lifecycle.journal_records import inspect, record

S = SubagentState


class RefusingRequests(SqliteDatabase):
    """A database whose `request` raises while ``refusing`` is set, as one closed under its journal does."""

    refusing = False

    def request(self, participant) -> None:
        if self.refusing:
            raise sqlite3.OperationalError("injected: no commit can be asked for")
        super().request(participant)


async def test_a_launch_whose_commit_could_not_be_asked_for_is_refused_and_never_written(tmp_path: Path) -> None:
    # The launch was told it failed (JOURNAL_UNAVAILABLE), yet its PENDING row stayed pending, and the next
    # commit wrote it: a child that never existed, listed as unfinished, INTERRUPTED at the next start.
    db = RefusingRequests(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    try:
        db.refusing = True
        journal.put(record("sa-ghost", "PENDING"))
        with pytest.raises(JournalError) as refused:
            await journal.sync_launch(["sa-ghost"])
        db.refusing = False
        journal.put(record("sa-other", "SUCCEEDED"))
        await journal.sync()
        assert await journal.get("sa-ghost") is None and await journal.unfinished() == []
        assert refused.value.code == "JOURNAL_WRITE_FAILED"
        assert str(refused.value).startswith("Not launched: the journal could not record the launch (injected")
        assert not journal.launch_dropped("sa-ghost")  # heard: its caller forgets the children now
    finally:
        await journal.close()
        db.close()
    assert inspect(tmp_path / "j.db", "SELECT subagent_id FROM lifecycle_records") == [("sa-other",)]


async def test_a_key_saved_while_no_commit_can_be_asked_for_raises_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    db = RefusingRequests(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    try:
        db.refusing = True
        with pytest.raises(JournalError, match="injected"):
            await asyncio.wait_for(journal.save_key("k1", b"s" * 32, 1.0, None), 5)  # it never returned
        db.refusing = False
        await journal.save_key("k1", b"s" * 32, 1.0, None)  # asked again, it is written
        assert [row[0] for row in await journal.load_keys()] == ["k1"]
    finally:
        await journal.close()
        db.close()


async def test_a_plugin_launch_refused_so_is_not_reported_interrupted_by_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "j.db"

    def service_on(db: SqliteDatabase) -> tuple[AsyncSubagentLifecycle, AgentSession]:
        registry, clock = make_registry(), FakeClock()
        model = ScriptedModel({"leaf": child_script})
        host = ChildHost(tools=registry, hooks=HookRegistry(), clock=clock)
        parent = AgentSession(model=model, tools=registry.resolve(None), session_id="parent-1", clock=clock,
                              workspace=tmp_path)
        return AsyncSubagentLifecycle(host, SqliteJournal(db=db)), parent

    db = RefusingRequests(path)
    service, parent = service_on(db)
    await service.start()
    try:
        db.refusing = True
        with inside_turn(parent, "turn-1"), pytest.raises(JournalError):
            await service.launch(SubagentLaunchRequest(goal="Review this change.", correlation_id="job-1"))
        db.refusing = False
        with inside_turn(parent, "turn-1"):  # the next commit; its correlation id was never taken
            handle = await service.launch(SubagentLaunchRequest(goal="Review this change.", correlation_id="job-1"))
            assert (await service.wait(handle, timeout_seconds=5)).state is S.SUCCEEDED
    finally:
        await service.close()
        db.close()
    db = SqliteDatabase(path)
    again, _ = service_on(db)
    await again.start()
    try:
        assert inspect(path, "SELECT subagent_id, state FROM lifecycle_records") == [(handle.subagent_id, "SUCCEEDED")]
    finally:
        await again.close()
        db.close()
