"""The journal conformance suite (every backend) and SQLite-specific durability tests.

A new backend joins the suite by adding a branch to `Backend.make` and its name
to the ``backend`` fixture's params.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sqlite3
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lifecycle._capability import KeyRing, sign, verify
from lifecycle._contract import CONTRACT_VERSION, SubagentHandle
from lifecycle._database import SqliteDatabase
from lifecycle._journal import Journal, JournalError, JournalRecord, MemoryJournal
from lifecycle._sqlite_journal import SqliteJournal
from tests.capped_writes import run_capped
from tests.polling import until


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


# --- conformance -------------------------------------------------------------------------


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
               record("sa-3", "PENDING", job=job)]
    for rec in records:
        journal.put(rec)
    await journal.sync()
    journal = await backend.reopen(journal)
    for rec in records:
        assert await journal.get(rec.subagent_id) == rec
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


def callers(journal: Journal, *calls: tuple[list[JournalRecord], list[str] | None]) -> list[asyncio.Future]:
    """Each call as its own caller, as `Supervisor.submit` makes one: it puts its records, then
    waits in ``sync_launch(ids)`` (``sync()`` for None). All put in one loop turn: one commit."""

    async def one(records: list[JournalRecord], ids: list[str] | None) -> None:
        for rec in records:
            journal.put(rec)
        await (journal.sync() if ids is None else journal.sync_launch(ids))

    return [asyncio.ensure_future(one(records, ids)) for records, ids in calls]


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
        assert rec is not None and rec.state == "INTERRUPTED" and rec.terminal
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


# --- SQLite specifics ----------------------------------------------------------------------


async def test_sqlite_journal_rows_and_the_owners_writes_share_one_commit(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    db.write("CREATE TABLE neighbour (x)")
    await db.durable()
    before = db.commits
    db.write("INSERT INTO neighbour VALUES (1)")
    journal.put(record("sa-1"))
    await asyncio.gather(journal.sync(), db.durable())
    assert db.commits == before + 1
    await journal.close()
    assert not db.closed  # the owner closes it
    assert await asyncio.to_thread(inspect, db.path, "SELECT count(*) FROM lifecycle_records") == [(1,)]
    db.close()


async def test_sqlite_never_blocks_the_loop_on_another_connections_lock(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path)
    await journal.open()
    store = sqlite3.connect(path, isolation_level=None)  # a neighbour holding a batch open across a loop turn
    try:
        store.execute("BEGIN IMMEDIATE")
        asyncio.get_running_loop().call_later(0.05, store.execute, "COMMIT")
        journal.put(record("sa-1"))
        await asyncio.wait_for(journal.sync(), 1.0)  # a blocked loop could not have run that COMMIT
        await journal.save_key("k1", b"s" * 32, 1.0, None)
    finally:
        store.close()
        await journal.close()


def inspect(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_sqlite_schema_mode_and_indexes(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        path = tmp_path / "j.db"
        assert await asyncio.to_thread(inspect, path, "PRAGMA journal_mode") == [("wal",)]
        assert await asyncio.to_thread(inspect, path, "PRAGMA user_version") == [(4,)]
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
    """A journal as version 1 (before stop requests were kept), 2 (before unsent steers were) or 3 (before
    jobs were) wrote it."""
    added = ["stop_reason", "steers"][:version - 1]
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


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_sqlite_a_journal_from_before_stops_steers_or_jobs_were_kept_opens_with_its_rows(tmp_path: Path,
                                                                                                version: int) -> None:
    path = tmp_path / "j.db"
    await asyncio.to_thread(_old_journal, path, version)
    journal = SqliteJournal(path)
    await journal.open()
    assert (await journal.get("sa-old")) == JournalRecord("sa-old", "p", None, "{}", "PENDING", 1.0, 2.0, goal="g")
    journal.put(record("sa-old", stop_reason="stopped by /stop", steers='[{"id": "s1", "text": "hurry"}]',
                       job='{"goal": "g"}'))
    await journal.close()
    journal = SqliteJournal(path)
    await journal.open()
    try:
        kept = await journal.get("sa-old")
        assert (kept.stop_reason, kept.steers) == ("stopped by /stop", '[{"id": "s1", "text": "hurry"}]')
        assert kept.job == '{"goal": "g"}'
        assert await asyncio.to_thread(inspect, path, "PRAGMA user_version") == [(4,)]
    finally:
        await journal.close()


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    await asyncio.to_thread(inspect, path, "PRAGMA user_version = 99")
    with pytest.raises(JournalError, match=f"{path} was written by a newer version") as refused:
        await SqliteJournal(path).open()
    assert refused.value.code == "JOURNAL_TOO_NEW"


async def test_sqlite_closed_journal_refuses_puts_and_close_is_idempotent(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    with pytest.raises(JournalError):
        journal.put(record("early"))
    await journal.open()
    await journal.close()
    await journal.close()
    with pytest.raises(JournalError) as info:
        journal.put(record("late"))
    assert info.value.code == "JOURNAL_CLOSED"


async def test_sqlite_a_failed_flush_keeps_records_and_sync_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "j.db"
    journal = SqliteJournal(path, busy_timeout=0.05)
    await journal.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the journal's flush must fail
        journal.put(record("sa-1"))
        with pytest.raises(JournalError) as info:
            await journal.sync()
        assert info.value.code == "JOURNAL_WRITE_FAILED" and isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert "will retry" in caplog.text
        journal.put(record("sa-2"))
        assert await journal.get("sa-1") == record("sa-1")  # kept, still readable
        blocker.execute("ROLLBACK")
        await journal.sync()  # the retry succeeds
    finally:
        blocker.close()
    journal = SqliteJournal(path)
    await journal.open()
    try:
        assert await journal.get("sa-1") == record("sa-1") and await journal.get("sa-2") == record("sa-2")
    finally:
        await journal.close()


async def test_sqlite_unserialisable_records_are_refused_loudly_and_alone(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j.db")
    await journal.open()
    try:
        journal.put(record("bad", result=object()))
        journal.put(record("good"))
        with pytest.raises(JournalError) as info:
            await journal.sync()
        assert info.value.code == "JOURNAL_REJECTED" and info.value.subagent_ids == ("bad",)
        assert await journal.get("good") == record("good") and await journal.get("bad") is None
    finally:
        await journal.close()


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


async def test_sqlite_sync_does_not_hang_when_its_database_is_closed_under_it(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "j.db")
    journal = SqliteJournal(db=db)
    await journal.open()
    db.close()  # as its owner (the gateway's store) would on the way out
    journal.put(record("sa-1"))
    with pytest.raises(JournalError):
        await asyncio.wait_for(journal.sync(), 5)
    with pytest.raises(JournalError):
        await journal.close()  # still finishes


CRASHING_WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from lifecycle._journal import JournalRecord
    from lifecycle._sqlite_journal import SqliteJournal

    async def main(path):
        journal = SqliteJournal(path)
        await journal.open()
        for i in range(2000):
            journal.put(JournalRecord(f"sa-{i}", "p", f"c-{i}", '{"i": %d}' % i, "RUNNING", 1.0, 2.5, goal="g"))
        await journal.sync()
        for i in range(2000, 4000):  # not synced: may or may not survive, must not corrupt
            journal.put(JournalRecord(f"sa-{i}", "p", None, '{"i": %d}' % i, "RUNNING", 1.0, 2.5))
        await asyncio.sleep(0)
        print("synced", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_sqlite_synced_records_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CRASHING_WRITER, str(path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert out == b"synced\n" and proc.returncode == -signal.SIGKILL
    journal = SqliteJournal(path)
    await journal.open()
    try:
        for i in range(2000):
            assert await journal.get(f"sa-{i}") == JournalRecord(f"sa-{i}", "p", f"c-{i}", '{"i": %d}' % i, "RUNNING", 1.0, 2.5, goal="g")
        assert await journal.find_correlation("p", "c-1999") == "sa-1999"
    finally:
        await journal.close()
    assert await asyncio.to_thread(inspect, path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_launch_synced_on_its_own_is_committed(journal: Journal) -> None:
    journal.put(record("sa-1", "PENDING"))
    await journal.sync_launch(["sa-1"])
    assert await journal.get("sa-1") == record("sa-1", "PENDING")
    await journal.sync_launch([])  # nothing pending: returns at once


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
