"""The journal conformance suite: every backend passes the same tests.

A new backend joins the suite by adding a branch to `Backend.open` and its name
to the ``backend`` fixture's params. What one backend does beyond the suite is
tested beside it: SQLite's in ``test_sqlite_journal*.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lifecycle._capability import KeyRing, sign, verify
from lifecycle._contract import CONTRACT_VERSION, SubagentHandle
from lifecycle._database import SqliteDatabase
from lifecycle._journal import Journal, JournalError, JournalRecord, MemoryJournal
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.journal_records import callers, record


class Backend:
    def __init__(self, kind: str, directory: Path):
        self.kind = kind
        self.path = directory / "journal.db"
        self.persistent = kind != "memory"
        self.open_journals: list[Journal] = []
        self.databases: list[SqliteDatabase] = []

    async def open(self, **options: Any) -> Journal:
        journal: Journal
        if self.kind == "memory":
            journal = MemoryJournal()
        elif self.kind == "sqlite":
            journal = SqliteJournal(self.path, **options)
        else:  # on a database another owner (the gateway's store) opened and writes to as well
            self.databases.append(SqliteDatabase(self.path))
            journal = SqliteJournal(db=self.databases[-1])
        await journal.open()
        self.open_journals.append(journal)
        return journal

    async def reopen(self, journal: Journal) -> Journal:
        """Close ``journal`` and open a fresh instance on the same storage (persistent backends only)."""
        if not self.persistent:
            pytest.skip(f"{self.kind} keeps nothing across instances")
        await journal.close()
        return await self.open()

    async def close_all(self) -> None:
        for journal in self.open_journals:
            await journal.close()
        for db in self.databases:
            db.close()


@pytest.fixture(params=["memory", "sqlite", "sqlite-shared"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    b = Backend(request.param, tmp_path)
    yield b
    await b.close_all()


@pytest.fixture
async def journal(backend: Backend) -> Journal:
    return await backend.open()


async def test_implements_the_protocol(journal: Journal) -> None:
    assert isinstance(journal, Journal)


async def test_reads_see_puts_before_any_sync(journal: Journal) -> None:
    rec = record("sa-1", correlation_id="c-1")
    journal.put(rec)
    assert await journal.get("sa-1") == rec
    assert await journal.find_correlation("session-1", "c-1") == "sa-1"
    assert await journal.get("missing") is None
    await journal.sync()
    assert await journal.get("sa-1") == rec


async def test_last_put_wins(backend: Backend, journal: Journal) -> None:
    journal.put(record("sa-1", "PENDING"))
    journal.put(record("sa-1", "RUNNING", started_at=2.0))
    journal.put(record("sa-1", "SUCCEEDED", started_at=2.0))
    assert (await journal.get("sa-1")) == record("sa-1", "SUCCEEDED", started_at=2.0)
    await journal.sync()
    journal = await backend.reopen(journal)
    assert (await journal.get("sa-1")) == record("sa-1", "SUCCEEDED", started_at=2.0)


async def test_synced_records_survive_reopening_exactly(backend: Backend, journal: Journal) -> None:
    odd = record(
        "sa-\u00e9",
        "FAILED",
        parent_session_id=None,
        correlation_id="c-\ud800",  # a lone surrogate, as a model may emit
        goal="goal with \ud83d\ude00 and \udfff",
        result=json.dumps({"nested": {"x": [None, True, 1e-300]}, "text": "\u2603 \ud800"}, ensure_ascii=False),
    )
    steers = json.dumps([{"id": "s1", "text": "use metric units \ud800"}])
    job = json.dumps({"subagent_id": "sa-3", "goal": "caf\u00e9 \ud800"}, ensure_ascii=False)
    records = [record("sa-1", stop_reason="stopped by /stop", steers=steers), record("sa-2", "SUCCEEDED"), odd,
               record("sa-3", "PENDING", job=job), record("sa-4", "PENDING", inline=True)]
    for rec in records:
        journal.put(rec)
    await journal.sync()
    journal = await backend.reopen(journal)
    for rec in records:
        assert await journal.get(rec.subagent_id) == rec
    assert not (await journal.get("sa-1")).inline and (await journal.get("sa-4")).inline
    assert await journal.find_correlation(None, "c-\ud800") == "sa-\u00e9"


async def test_correlation_ids_are_scoped_per_parent(journal: Journal) -> None:
    journal.put(record("sa-1", correlation_id="job"))
    journal.put(record("sa-2", correlation_id="job", parent_session_id="session-2"))
    journal.put(record("sa-3", correlation_id="job", parent_session_id=None))
    await journal.sync()
    assert await journal.find_correlation("session-1", "job") == "sa-1"
    assert await journal.find_correlation("session-2", "job") == "sa-2"
    assert await journal.find_correlation(None, "job") == "sa-3"
    assert await journal.find_correlation("session-3", "job") is None
    assert await journal.find_correlation("session-1", "other") is None


@pytest.mark.parametrize("parent", ["session-1", None])
async def test_a_held_correlation_id_refuses_another_child(journal: Journal, parent: str | None) -> None:
    journal.put(record("sa-1", correlation_id="job", parent_session_id=parent))
    await journal.sync()
    journal.put(record("sa-1", "SUCCEEDED", correlation_id="job", parent_session_id=parent))  # same child: fine
    journal.put(record("sa-2", correlation_id="job", parent_session_id=parent))
    journal.put(record("sa-3"))
    with pytest.raises(JournalError) as info:
        await journal.sync()
    assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-2",)
    assert await journal.get("sa-2") is None
    assert (await journal.get("sa-1")).state == "SUCCEEDED"  # type: ignore[union-attr]
    assert await journal.get("sa-3") is not None
    assert await journal.find_correlation(parent, "job") == "sa-1"
    await journal.sync()  # reported once


async def test_a_clash_inside_one_batch_keeps_the_first(journal: Journal) -> None:
    journal.put(record("sa-1", correlation_id="job"))
    journal.put(record("sa-2", correlation_id="job"))
    with pytest.raises(JournalError):
        await journal.sync()
    assert await journal.find_correlation("session-1", "job") == "sa-1"
    assert await journal.get("sa-2") is None


async def test_a_clash_among_many_refuses_only_the_offender(journal: Journal) -> None:
    journal.put(record("holder", correlation_id="c-700"))
    await journal.sync()
    for i in range(1_000):
        journal.put(record(f"sa-{i}", correlation_id=f"c-{i}"))
    with pytest.raises(JournalError) as info:
        await journal.sync()
    assert info.value.subagent_ids == ("sa-700",)
    assert await journal.get("sa-699") is not None and await journal.get("sa-700") is None
    assert await journal.find_correlation("session-1", "c-700") == "holder"


async def test_a_refusal_fails_only_the_launch_whose_record_it_is_and_that_launch_whole(
        backend: Backend, journal: Journal) -> None:
    # A refused record failed every sync_launch of its commit: a launch whose rows were committed
    # was told it failed, its caller forgot its children, and a restart called them INTERRUPTED.
    journal.put(record("holder", correlation_id="job"))
    await journal.sync()
    ok, refused, finishing = callers(
        journal,
        ([record("sa-a1", "PENDING")], ["sa-a1"]),
        ([record("sa-b1", "PENDING", correlation_id="job"), record("sa-b2", "PENDING")], ["sa-b1", "sa-b2"]),
        ([record("sa-done", "SUCCEEDED")], None),  # a finished child's result, as the publisher syncs it
    )
    await ok
    await finishing  # the refusal was told to its launch: no one else hears of it
    with pytest.raises(JournalError) as info:
        await refused
    assert info.value.code == "JOURNAL_CONFLICT" and info.value.subagent_ids == ("sa-b1", "sa-b2")
    await journal.sync()  # told once
    journal = await backend.reopen(journal) if backend.persistent else journal
    assert await journal.get("sa-a1") == record("sa-a1", "PENDING")
    assert await journal.get("sa-done") == record("sa-done", "SUCCEEDED")
    for sid in ("sa-b1", "sa-b2"):  # refused whole: nothing of it left for a restart to call INTERRUPTED
        assert await journal.get(sid) is None
    assert sorted(r.subagent_id for r in await journal.unfinished()) == ["holder", "sa-a1"]
    assert await journal.find_correlation("session-1", "job") == "holder"


async def test_a_refusal_no_launch_owns_is_the_plain_syncs_and_kept_until_one_hears_it(journal: Journal) -> None:
    journal.put(record("holder", correlation_id="job"))
    await journal.sync()
    clash = record("sa-x", "SUCCEEDED", correlation_id="job")  # no launch's record
    ok, plain = callers(journal, ([record("sa-a1", "PENDING"), clash], ["sa-a1"]), ([], None))
    await ok
    with pytest.raises(JournalError) as info:
        await plain
    assert info.value.subagent_ids == ("sa-x",)
    (ok,) = callers(journal, ([record("sa-a2", "PENDING"), dataclasses.replace(clash, subagent_id="sa-y")],
                              ["sa-a2"]))
    await ok  # no plain sync was waiting: the refusal is kept ...
    with pytest.raises(JournalError) as info:
        await journal.sync()  # ... for the next one
    assert info.value.subagent_ids == ("sa-y",)
    await journal.sync()
    assert await journal.get("sa-a1") is not None and await journal.get("sa-a2") is not None


async def test_interrupt_unfinished_marks_every_live_record(backend: Backend, journal: Journal) -> None:
    for sid, state in [("p", "PENDING"), ("r", "RUNNING"), ("c", "CANCEL_REQUESTED"), ("s", "SUCCEEDED")]:
        journal.put(record(sid, state, job='{"goal": "g"}' if state == "PENDING" else None))
    await journal.sync()
    journal.put(record("late", "STARTING"))  # not yet flushed: still covered
    seen: list[str] = []

    def make_result(old: JournalRecord) -> str:
        seen.append(old.state)
        return json.dumps({"state": "INTERRUPTED", "was": old.state})

    ids = await journal.interrupt_unfinished(99.5, make_result)
    assert sorted(ids) == ["c", "late", "p", "r"]
    assert sorted(seen) == ["CANCEL_REQUESTED", "PENDING", "RUNNING", "STARTING"]
    journal = await backend.reopen(journal) if backend.persistent else journal
    for sid in ids:
        rec = await journal.get(sid)
        # A child whose cancel was asked ends as that cancel would have ended it.
        assert rec is not None and rec.state == ("CANCELLED" if sid == "c" else "INTERRUPTED") and rec.terminal
        assert rec.completed_at == rec.updated_at == 99.5 and json.loads(rec.result)["state"] == "INTERRUPTED"
        assert rec.job is None  # a finished child's job is never handed to an engine again
    assert await journal.get("s") == record("s", "SUCCEEDED")
    assert await journal.interrupt_unfinished(100.0, make_result) == []


async def test_unfinished_lists_live_records_and_interrupting_can_keep_some(backend: Backend, journal: Journal) -> None:
    for sid, state in [("p", "PENDING"), ("r", "RUNNING"), ("s", "SUCCEEDED")]:
        journal.put(record(sid, state))
    journal.put(record("late", "PENDING"))  # not yet flushed: still listed
    assert sorted(r.subagent_id for r in await journal.unfinished()) == ["late", "p", "r"]
    assert await journal.get("late") == record("late", "PENDING")
    ids = await journal.interrupt_unfinished(5.0, lambda old: json.dumps({"state": "INTERRUPTED"}), keep={"r", "gone"})
    assert sorted(ids) == ["late", "p"]
    journal = await backend.reopen(journal) if backend.persistent else journal
    assert [r.subagent_id for r in await journal.unfinished()] == ["r"]
    assert (await journal.get("r")) == record("r", "RUNNING")


async def test_sweep_deletes_old_terminal_records_and_frees_their_correlation_ids(journal: Journal) -> None:
    journal.put(record("old", "SUCCEEDED", completed_at=10.0, correlation_id="job"))
    journal.put(record("older", "CANCELLED", completed_at=5.0))
    journal.put(record("recent", "FAILED", completed_at=30.0))
    journal.put(record("live", "RUNNING", completed_at=1.0))  # odd, but not terminal: never swept
    journal.put(record("pending-and-old", "INTERRUPTED", completed_at=1.0))
    assert await journal.sweep(completed_before=20.0) == 3
    for sid in ["old", "older", "pending-and-old"]:
        assert await journal.get(sid) is None
    assert await journal.get("recent") is not None and await journal.get("live") is not None
    assert await journal.find_correlation("session-1", "job") is None
    journal.put(record("new", correlation_id="job"))
    await journal.sync()
    assert await journal.find_correlation("session-1", "job") == "new"
    assert await journal.sweep(completed_before=20.0) == 0


async def test_keys_are_saved_and_loaded(backend: Backend, journal: Journal) -> None:
    ring = KeyRing()
    first = ring.active_kid
    handle_fields = dict(subagent_id="sa-1", parent_session_id="s", correlation_id=None, created_at=1.5,
                         role="leaf", depth=1, provider=None, model=None)  # fmt: skip
    old = SubagentHandle(CONTRACT_VERSION, capability=sign(ring, **handle_fields), **handle_fields)
    ring.rotate()
    ring.retire(first)
    for row in ring.export():
        await journal.save_key(*row)
    current = SubagentHandle(CONTRACT_VERSION, capability=sign(ring, **handle_fields), **handle_fields)
    journal.put(record("sa-1", handle=json.dumps(current.to_dict())))
    await journal.sync()
    journal = await backend.reopen(journal) if backend.persistent else journal
    rows = await journal.load_keys()
    assert [tuple(r) for r in rows] == [tuple(r) for r in ring.export()]
    loaded = KeyRing(rows)
    assert loaded.active_kid == ring.active_kid and not verify(loaded, old)
    stored = await journal.get("sa-1")
    assert stored is not None and verify(loaded, SubagentHandle.from_dict(json.loads(stored.handle)))


async def test_ten_thousand_puts(backend: Backend, journal: Journal) -> None:
    for i in range(10_000):
        journal.put(record(f"sa-{i}", correlation_id=f"c-{i}"))
    await journal.sync()
    if isinstance(journal, SqliteJournal):
        assert journal.commits <= 3, journal.commits  # group commit: a handful of transactions, not 10 000
    journal = await backend.reopen(journal) if backend.persistent else journal
    for i in (0, 4_999, 9_999):
        assert await journal.get(f"sa-{i}") == record(f"sa-{i}", correlation_id=f"c-{i}")
    assert await journal.find_correlation("session-1", "c-1234") == "sa-1234"


async def test_sync_with_nothing_put_returns_at_once(journal: Journal) -> None:
    await asyncio.wait_for(journal.sync(), 1.0)


async def test_a_launch_synced_on_its_own_is_committed(journal: Journal) -> None:
    journal.put(record("sa-1", "PENDING"))
    await journal.sync_launch(["sa-1"])
    assert await journal.get("sa-1") == record("sa-1", "PENDING")
    await journal.sync_launch([])  # nothing pending: returns at once
