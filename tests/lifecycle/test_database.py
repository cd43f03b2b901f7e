"""SqliteDatabase: group commit on the event loop, savepoints, participants, failures and retries."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing import FakeClock
from lifecycle import SqliteDatabase
from lifecycle import _database as database_module
from platforms.fakes._waiting import wait_until
from tests.gateway.cli_process import ROOT, on_private_tmpfs


@pytest.fixture
def db(tmp_path: Path):
    database = SqliteDatabase(tmp_path / "state" / "s.db")
    database.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    yield database
    database.close()


def outside(path: Path, sql: str) -> list[tuple]:
    """What another connection sees: committed rows only."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class Recorder:
    """A participant writing its pending rows at each commit it asked for."""

    def __init__(self, db: SqliteDatabase, *, fail: bool = False) -> None:
        self.db, self.fail = db, fail
        self.pending: list[tuple] = []
        self.outcomes: list[BaseException | None] = []

    def flush(self) -> None:
        rows, self.pending = self.pending, []
        for row in rows:
            self.db.write("INSERT OR REPLACE INTO t VALUES (?, ?)", row)
        if self.fail:
            raise RuntimeError("flush broke")

    def committed(self, error: BaseException | None) -> None:
        self.outcomes.append(error)


async def test_writes_of_one_loop_turn_share_one_commit_at_the_next(db: SqliteDatabase) -> None:
    before = db.commits
    for i in range(100):
        db.write("INSERT INTO t VALUES (?, ?)", (f"k{i}", i))
    assert db.read_one("SELECT count(*) FROM t") == (100,)  # visible to this connection at once
    assert outside(db.path, "SELECT count(*) FROM t") == [(0,)]  # not committed yet
    await asyncio.gather(db.durable(), db.durable())
    assert db.commits == before + 1
    assert outside(db.path, "SELECT count(*) FROM t") == [(100,)]
    await asyncio.wait_for(db.durable(), 1)  # nothing pending: at once


async def test_nested_transactions_roll_back_alone(db: SqliteDatabase) -> None:
    with db.transaction():
        db.write("INSERT INTO t VALUES ('outer', 1)")
        with pytest.raises(ValueError), db.transaction():
            db.write("INSERT INTO t VALUES ('inner', 2)")
            raise ValueError("undo the inner block")
        db.write_many("INSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2)])
    await db.durable()
    assert outside(db.path, "SELECT k FROM t ORDER BY k") == [("a",), ("b",), ("outer",)]


def test_without_an_event_loop_a_write_commits_at_once(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "s.db")
    try:
        db.write("CREATE TABLE t (k)")
        with db.transaction():
            db.write("INSERT INTO t VALUES (1)")
            db.write("INSERT INTO t VALUES (2)")
        assert outside(db.path, "SELECT count(*) FROM t") == [(2,)]
    finally:
        db.close()
        db.close()  # idempotent
    with pytest.raises(sqlite3.ProgrammingError):
        db.read("SELECT 1")


async def test_text_with_lone_surrogates_binds_and_reads_back(db: SqliteDatabase) -> None:
    odd = "a \ud800 b \udfff \u2603"
    db.write("INSERT INTO t VALUES (?, ?)", (SqliteDatabase.text("k"), SqliteDatabase.text(odd)))
    await db.durable()
    (value,) = db.read_one("SELECT v FROM t WHERE k = 'k'")
    assert SqliteDatabase.untext(value) == odd
    assert SqliteDatabase.text(None) is None
    with pytest.raises(TypeError):
        SqliteDatabase.text(b"bytes")  # type: ignore[arg-type]


async def test_a_commit_sqlite_refused_but_left_open_is_rolled_back_and_the_next_write_commits_alone(
        db: SqliteDatabase, caplog) -> None:
    # A deferred foreign key fails only at COMMIT, and SQLite keeps the transaction open then (as for
    # SQLITE_BUSY). It was left open: every later write joined a batch that could never commit.
    db.write("CREATE TABLE parent (id PRIMARY KEY)")
    db.write("CREATE TABLE child (pid REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    await db.durable()
    db.read("PRAGMA foreign_keys=ON")  # outside a transaction, where it takes effect
    db.write("INSERT INTO child VALUES (1)")  # violates the key only at COMMIT
    db.write("INSERT INTO t VALUES ('same batch', 1)")
    with pytest.raises(sqlite3.IntegrityError):
        await db.durable()
    assert "retrying with the next write" in caplog.text and "its writes are dropped" in caplog.text
    assert not db._conn.in_transaction
    db.write("INSERT INTO t VALUES ('next', 1)")
    await db.durable()
    assert outside(db.path, "SELECT k FROM t") == [("next",)]  # nothing of the refused batch, half or whole
    assert outside(db.path, "SELECT count(*) FROM child") == [(0,)]


async def test_participants_flush_into_the_commit_and_a_failing_one_spoils_only_its_own_rows(db: SqliteDatabase) -> None:
    good, bad = Recorder(db), Recorder(db, fail=True)
    good.pending, bad.pending = [("g", 1)], [("b", 1)]
    db.write("INSERT INTO t VALUES ('direct', 1)")
    db.request(good)
    db.request(bad)
    db.request(good)  # asked twice, flushed once
    await db.durable()
    assert outside(db.path, "SELECT k FROM t ORDER BY k") == [("direct",), ("g",)]
    assert good.outcomes == [None]
    assert [type(e) for e in bad.outcomes] == [RuntimeError]


async def test_a_participants_commit_waits_for_another_connections_lock_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    db = SqliteDatabase(tmp_path / "s.db", busy_timeout=2.0)
    db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # e.g. the gateway's store, on its own connection
        recorder = Recorder(db)
        recorder.pending = [("late", 1)]
        db.request(recorder)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticking = asyncio.create_task(ticker())
        asyncio.get_running_loop().call_later(0.05, other.execute, "COMMIT")
        await asyncio.wait_for(db.durable(), 1.0)  # a blocked loop could not run the COMMIT above
        ticking.cancel()
        assert recorder.outcomes == [None] and ticks > 5
        assert outside(db.path, "SELECT k FROM t") == [("late",)]
        other.execute("BEGIN IMMEDIATE")  # now held for good: reported once busy_timeout passes
        db.busy_timeout = 0.05
        recorder.pending = [("never", 1)]
        db.request(recorder)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await db.durable()
        assert isinstance(recorder.outcomes[-1], sqlite3.OperationalError)
        other.execute("ROLLBACK")
    finally:
        other.close()
        db.close()


async def test_automatic_checkpoints_can_be_switched_off(db: SqliteDatabase) -> None:
    db.automatic_checkpoints(False)
    assert db.read_one("PRAGMA wal_autocheckpoint") == (0,)
    db.automatic_checkpoints(True)
    assert db.read_one("PRAGMA wal_autocheckpoint") == (1000,)


async def test_close_commits_what_is_pending(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "s.db")
    db.write("CREATE TABLE t (k)")
    db.write("INSERT INTO t VALUES (1)")
    recorder = Recorder(db)
    recorder.pending = []
    db.request(recorder)
    db.close()
    assert outside(db.path, "SELECT count(*) FROM t") == [(1,)] and recorder.outcomes == [None]
    assert outside(db.path, "PRAGMA journal_mode") == [("wal",)]


def fill_up(db: SqliteDatabase) -> None:
    """The file can grow no more: the next write that needs a new page fails with SQLITE_FULL, and
    SQLite rolls the whole open transaction back, as it does on a full disk."""
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")


async def test_writes_a_full_disk_rolled_back_are_written_again_once_there_is_room(db: SqliteDatabase) -> None:
    await db.durable()
    db.write("INSERT INTO t VALUES ('small', 1)")  # fits the pages there are
    fill_up(db)
    with pytest.raises(sqlite3.OperationalError, match="full"):
        db.write("INSERT INTO t VALUES ('big', ?)", ("x" * 50_000,))
    assert db.read("SELECT k FROM t") == [("small",)]  # its writer took it for done
    await db.durable()
    assert outside(db.path, "SELECT k FROM t") == [("small",)]


async def test_lost_writes_are_written_again_once_there_is_room_without_waiting_for_other_traffic(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = SqliteDatabase(tmp_path / "idle.db", lost_retry=(0.01, 0.05))
    try:
        db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
        await db.durable()
        refusing = "CREATE TRIGGER refuse BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        db.write("INSERT INTO t VALUES ('small', 1)")  # its writer takes it for done
        fill_up(db)
        with pytest.raises(sqlite3.OperationalError, match="full"):
            db.write("INSERT INTO t VALUES ('big', ?)", ("x" * 50_000,))
        outside(db.path, refusing)  # the disk still refuses the lost write
        await wait_until(lambda: any("still cannot" in r.getMessage() for r in caplog.records), 5.0, poll=0.01)
        outside(db.path, "DROP TRIGGER refuse")  # room again; nobody uses the database meanwhile
        await wait_until(lambda: outside(db.path, "SELECT k FROM t") == [("small",)], 5.0, poll=0.01)
        assert any("written again" in r.getMessage() for r in caplog.records)
    finally:
        db.close()


async def test_while_lost_writes_cannot_be_written_again_reads_and_waits_fail_rather_than_miss_them(
        db: SqliteDatabase) -> None:
    await db.durable()
    db.write("INSERT INTO t VALUES ('small', 1)")
    fill_up(db)
    with pytest.raises(sqlite3.OperationalError, match="full"):
        db.write("INSERT INTO t VALUES ('big', ?)", ("x" * 50_000,))
    refusing = "CREATE TRIGGER refuse BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    outside(db.path, refusing)  # the disk still refuses the lost write
    with pytest.raises(sqlite3.DatabaseError, match="full"):
        db.read("SELECT k FROM t")
    with pytest.raises(sqlite3.DatabaseError, match="full"):
        await db.durable()
    outside(db.path, "DROP TRIGGER refuse")
    await db.durable()
    assert outside(db.path, "SELECT k FROM t") == [("small",)]


async def test_a_block_rolled_back_by_a_full_disk_is_not_written_again_but_what_came_before_is(
        db: SqliteDatabase) -> None:
    await db.durable()
    db.write("INSERT INTO t VALUES ('before', 1)")
    fill_up(db)
    with pytest.raises(sqlite3.OperationalError, match="full"), db.transaction():
        db.write("INSERT INTO t VALUES ('inside', 1)")
        db.write("INSERT INTO t VALUES ('big', ?)", ("x" * 50_000,))
    db.read("PRAGMA max_page_count=1000000")
    with db.transaction():
        db.write("INSERT INTO t VALUES ('after', 1)")
    await db.durable()
    assert outside(db.path, "SELECT k FROM t ORDER BY k") == [("after",), ("before",)]


def test_a_commit_a_real_full_disk_refused_is_written_once_there_is_room(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    prefix = on_private_tmpfs(disk, "size=512k") or pytest.skip("needs user and mount namespaces")
    done = subprocess.run([*prefix, sys.executable, "-m", "tests.lifecycle.full_disk_worker", str(disk)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["refused: database or disk is full", "[('answer',)]"]


async def test_participants_are_not_told_their_rows_are_durable_when_a_later_flush_met_a_full_disk(
        db: SqliteDatabase) -> None:
    await db.durable()
    first, second = Recorder(db), Recorder(db)
    first.pending = [("first", 1)]
    second.pending = [("big", "x" * 50_000)]  # the disk has no room for it: SQLite rolls the batch back
    fill_up(db)
    db.request(first)
    db.request(second)
    with contextlib.suppress(sqlite3.Error):
        await db.durable()
    assert outside(db.path, "SELECT k FROM t") == []
    assert first.outcomes[0] is not None and second.outcomes[0] is not None


async def test_a_nearly_full_disk_is_down_until_writes_go_through_for_a_while_with_one_error_and_one_info(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A commit now and then slips through a nearly full disk: that is no recovery, and /healthz must
    # not flip between 200 and 503 with an ERROR and an INFO each time.
    caplog.set_level(logging.INFO, "lifecycle.database")
    clock = FakeClock(autojump=False)
    db = SqliteDatabase(tmp_path / "near.db", clock=clock, recovery_seconds=30.0)
    try:
        db.write("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
        await db.durable()
        for n in range(3):
            fill_up(db)
            with pytest.raises(sqlite3.OperationalError, match="full"):
                db.write("INSERT INTO t VALUES (?, ?)", (f"big-{n}", "x" * 50_000))
            db.read("PRAGMA max_page_count=1073741823")  # a little room: the next writes go through
            db.write("INSERT INTO t VALUES (?, 1)", (f"small-{n}",))
            await db.durable()
            assert db.write_error == "database or disk is full"
            clock.advance(20.0)
            assert db.write_error == "database or disk is full"  # 20 s without a refusal: not yet
        since = db.write_error_since
        assert since == clock.time() - 60.0  # the episode's first refusal
        clock.advance(10.0)
        assert db.write_error is None and db.write_error_since is None  # 30 s: written again, even idle
        said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "lifecycle.database"
                and ("cannot be written" in r.getMessage() or "is written again" in r.getMessage())]
        assert [level for level, _ in said] == [logging.ERROR, logging.INFO]
        assert said[1][1].endswith("is written again, after 70 s")
    finally:
        db.close()


def test_the_logs_file_is_cut_back_once_a_checkpoint_emptied_it(tmp_path: Path, monkeypatch) -> None:
    # A burst grew the write-ahead log's file by hundreds of megabytes, kept for the life of the process.
    monkeypatch.setattr(database_module, "WAL_KEPT_BYTES", 64 * 1024)
    database = SqliteDatabase(tmp_path / "s.db")
    try:
        database.automatic_checkpoints(False)  # as while the gateway's checkpointer runs
        database.write("CREATE TABLE t (v)")
        database.write_many("INSERT INTO t VALUES (?)", [("x" * 500,)] * 4000)
        database.commit()
        wal = tmp_path / "s.db-wal"
        assert wal.stat().st_size > 1024 * 1024
        outside(tmp_path / "s.db", "PRAGMA wal_checkpoint(PASSIVE)")  # the checkpointer's own connection
        database.write("INSERT INTO t VALUES (1)")  # the log begins again from its start
        database.commit()
        assert wal.stat().st_size <= 64 * 1024
    finally:
        database.close()
