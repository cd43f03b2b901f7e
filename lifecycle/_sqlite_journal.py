"""`SqliteJournal`: the lifecycle journal on a `SqliteDatabase` (WAL, group commit on the loop).

It passes the same conformance suite as every journal (``tests/lifecycle/test_journal.py``);
the contract is in `lifecycle._journal`.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

from lifecycle._contract import SubagentState
from lifecycle._database import SqliteDatabase
from lifecycle._journal import (
    _TERMINAL,
    SCHEMA_VERSION,
    JournalError,
    JournalRecord,
    KeyRowTuple,
    MakeResult,
    _interrupted,
)
from lifecycle._sqlite_commit_failures import CommitFailures, _refusal

logger = logging.getLogger("lifecycle._journal")
T = TypeVar("T")

_COLUMNS = (
    "subagent_id, parent_session_id, correlation_id, handle, state,"
    " created_at, updated_at, started_at, completed_at, result, goal, stop_reason, steers, job, inline"
)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS lifecycle_records (
        subagent_id TEXT NOT NULL PRIMARY KEY, parent_session_id TEXT, correlation_id TEXT,
        handle TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        started_at REAL, completed_at REAL, result TEXT, goal TEXT NOT NULL, stop_reason TEXT, steers TEXT,
        job TEXT, inline INTEGER NOT NULL DEFAULT 0)""",
    # IFNULL(.., 0): SQLite treats NULLs as distinct in unique indexes, but a parent-less child's
    # correlation ids must be unique too. The integer 0 never equals a text or blob session id.
    """CREATE UNIQUE INDEX IF NOT EXISTS lifecycle_records_correlation
        ON lifecycle_records (IFNULL(parent_session_id, 0), correlation_id) WHERE correlation_id IS NOT NULL""",
    """CREATE INDEX IF NOT EXISTS lifecycle_records_completed
        ON lifecycle_records (completed_at) WHERE completed_at IS NOT NULL""",
    """CREATE TABLE IF NOT EXISTS lifecycle_keys (
        kid TEXT NOT NULL PRIMARY KEY, secret BLOB NOT NULL, created_at REAL NOT NULL, retired_at REAL)""",
)
_UPDATE_ALL = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in _COLUMNS.split(",")[1:])
_ROW_MARKS = "(" + ",".join("?" * 15) + ")"
# Rows per statement: one multi-row statement costs far less than a statement per row. Fixed
# sizes keep the set of statements small enough for sqlite3's statement cache.
_CHUNKS = (512, 64, 8, 1)
_SELECT = f"SELECT {_COLUMNS} FROM lifecycle_records"
_IN_TERMINAL = "state IN (" + ",".join("?" * len(_TERMINAL)) + ")"
SWEEP_BATCH = 1000
"""Records one statement of `SqliteJournal.sweep` forgets: milliseconds of the event loop, where a
single statement for 200,000 held it for seconds."""
_SWEEP = (f"DELETE FROM lifecycle_records WHERE rowid IN (SELECT rowid FROM lifecycle_records"
          f" WHERE completed_at < ? AND {_IN_TERMINAL} ORDER BY completed_at LIMIT ?)")
_SAVE_KEY = (
    "INSERT INTO lifecycle_keys (kid, secret, created_at, retired_at) VALUES (?,?,?,?) ON CONFLICT(kid)"
    " DO UPDATE SET secret=excluded.secret, created_at=excluded.created_at, retired_at=excluded.retired_at"
)
_text, _untext = SqliteDatabase.text, SqliteDatabase.untext


@functools.cache
def _upsert_sql(rows: int) -> str:
    values = ",".join([_ROW_MARKS] * rows)
    return f"INSERT INTO lifecycle_records ({_COLUMNS}) VALUES {values} ON CONFLICT(subagent_id) DO UPDATE SET {_UPDATE_ALL}"


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _to_row(r: JournalRecord) -> tuple:
    # Only str/bytes/float/None reach sqlite, so binding itself cannot fail (a huge int would).
    # ASCII text (ids, states, the JSON documents as the service writes them) needs no check.
    sid, pid, cid, handle, state, result, goal, stop, steers, job = (
        r.subagent_id, r.parent_session_id, r.correlation_id, r.handle, r.state, r.result, r.goal, r.stop_reason,
        r.steers, r.job)
    if type(state) is not str:
        state = state.value if isinstance(state, SubagentState) else state
    return (
        sid if type(sid) is str and sid.isascii() else _text(sid),
        pid if type(pid) is str and pid.isascii() else _text(pid),
        None if cid is None else _text(cid),
        handle if type(handle) is str and handle.isascii() else _text(handle),
        _text(state), float(r.created_at), float(r.updated_at), _float(r.started_at), _float(r.completed_at),
        None if result is None else result if type(result) is str and result.isascii() else _text(result),
        goal if type(goal) is str and goal.isascii() else _text(goal),
        None if stop is None else _text(stop),
        None if steers is None else _text(steers),
        None if job is None else job if type(job) is str and job.isascii() else _text(job),
        1 if r.inline else 0,
    )


def _from_row(row: tuple) -> JournalRecord:
    return JournalRecord(*map(_untext, row[:5]), row[5], row[6], row[7], row[8], _untext(row[9]), _untext(row[10]),
                         _untext(row[11]), _untext(row[12]), _untext(row[13]), bool(row[14]))


class SqliteJournal(CommitFailures):
    """`Journal` on SQLite, sharing the connection and group commit of a `SqliteDatabase`.

    ``SqliteJournal(path)`` opens (and closes) a database of its own;
    ``SqliteJournal(db=database)`` joins one that is already open, such as the one the
    gateway's store runs on, and leaves it open on `close`. `put` only remembers the
    record; the records put during one turn of the event loop are written together, as
    multi-row upserts, into the commit at the next turn. Nothing here waits for a lock on
    the loop (see `SqliteDatabase.request`), and reads run inline, seeing unflushed puts.
    A failed write keeps the records for the next attempt, made with the next put or sync, or on
    its own, backing off (`_retry_later`), except those of the launches waiting on it in
    `sync_launch`, which are dropped. What a failed or refusing commit does is its base's
    (`lifecycle._sqlite_commit_failures`).
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, db: SqliteDatabase | None = None,
        busy_timeout: float = 5.0,
    ) -> None:
        if (path is None) == (db is None):
            raise ValueError("SqliteJournal needs a path or an open database (db=...), not both")
        self._path = path
        self._busy_timeout = busy_timeout
        self._db = db
        self._owns_db = db is None
        self._state = "new"  # -> "open" -> "closed"
        self._pending: dict[str, JournalRecord] = {}
        self._flushed: dict[str, JournalRecord] | None = None  # written in the commit under way
        self._seq = 0  # puts so far
        self._upto = 0  # puts the commit under way covers
        self._committed = 0  # every put numbered <= this is committed (or refused and reported)
        self._waiters: list[asyncio.Future[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the journal was opened on and is used from: every launch syncs, and asking
        asyncio for the running loop costs a getpid() system call on Python 3.11."""
        """Sync calls waiting: the next commit of ours covers every one of them (it writes every
        record put before it)."""
        self._ops: list[tuple[Callable[[], Any], asyncio.Future]] = []
        self._ops_flushed: list[tuple[asyncio.Future, Any, BaseException | None]] = []
        self._refused: list[tuple[str, str]] = []
        self._unreported: list[tuple[str, str]] = []
        """Refusals (id, reason) no caller has heard yet: a plain sync hears them all, a launch its own."""
        self._launches: dict[asyncio.Future[None], tuple[str, ...]] = {}
        """`sync_launch` calls waiting, with the ids of their records: dropped if the commit fails."""
        self._unheard: dict[str, BaseException] = {}
        """What a launch's waiter was told (refused whole, or dropped by a failed commit) when its
        caller was cancelled before it heard, by the ids of its records: for when it asks again."""
        self._abandoned: set[str] = set()
        """Records of launches whose wait was cancelled before their commit, until they ask again
        (`Supervisor` does): their refusals are kept for them, not told to a plain sync."""
        self._dropped: set[str] = set()
        """Records of launches refused whole or dropped by a failed commit, until their callers have heard
        (`launch_dropped`)."""
        self._retry: asyncio.TimerHandle | None = None
        """The next try of records a failed commit left pending (`_retry_later`)."""
        self._retry_delay: float | None = None
        """Seconds until that try; None until a commit fails, and again once one succeeds."""
        self.commits = 0
        """Commits that carried records; for tests and metrics."""

    @property
    def db(self) -> SqliteDatabase:
        """The database the journal writes to."""
        if self._db is None:
            raise JournalError("The journal is not open.", code="JOURNAL_CLOSED")
        return self._db

    async def open(self) -> None:
        if self._state == "open":
            return
        if self._state == "closed":
            raise JournalError("The journal is closed.", code="JOURNAL_CLOSED")
        try:
            if self._owns_db:
                self._db = SqliteDatabase(self._path, busy_timeout=self._busy_timeout)
            version = self._db.read_one("PRAGMA user_version")[0]
            if version > SCHEMA_VERSION:
                raise JournalError(f"{self._db.path} was written by a newer version (lifecycle journal schema {version};"
                                   f" this one reads up to {SCHEMA_VERSION}): run that version or a later one, or"
                                   " restore a backup this version made", code="JOURNAL_TOO_NEW")
            self._state = "open"
            self._loop = asyncio.get_running_loop()
            if version < SCHEMA_VERSION:
                await self._write(functools.partial(self._create_schema, version))
        except BaseException as exc:
            self._state = "new"
            if self._owns_db and self._db is not None:
                self._db.close()
                self._db = None
            if isinstance(exc, sqlite3.Error):
                raise JournalError(f"Journal database error: {exc}") from exc
            raise

    async def close(self) -> None:
        if self._state != "open":
            self._state = "closed"
            return
        try:
            await self.sync()
        finally:
            self._state = "closed"
            if self._retry is not None:
                self._retry.cancel()
                self._retry = None
            if self._pending:
                logger.error("journal: closed with %d records unwritten", len(self._pending))
            if self._owns_db:
                try:
                    self._db.close()
                except sqlite3.Error as exc:
                    logger.error("journal: closing the database failed: %s", exc)

    def put(self, record: JournalRecord) -> None:
        self._check_open()
        self._pending[record.subagent_id] = record
        self._seq += 1
        self._request()

    async def sync(self) -> None:
        await self._sync(None)

    async def sync_launch(self, subagent_ids: Collection[str]) -> None:
        await self._sync(subagent_ids)

    def launch_dropped(self, subagent_id: str) -> bool:
        return subagent_id in self._dropped

    async def get(self, subagent_id: str) -> JournalRecord | None:
        self._check_open()
        record = self._pending.get(subagent_id)
        if record is not None:
            return record
        row = self._read_one(f"{_SELECT} WHERE subagent_id = ?", (_text(subagent_id),))
        return _from_row(row) if row else None

    async def find_correlation(self, parent_session_id: str | None, correlation_id: str) -> str | None:
        self._check_open()
        # A linear scan: the unflushed batch is small, and only launches with a correlation id look.
        for r in self._pending.values():
            if r.correlation_id == correlation_id and r.parent_session_id == parent_session_id:
                return r.subagent_id
        sql = "SELECT subagent_id FROM lifecycle_records WHERE IFNULL(parent_session_id, 0) = IFNULL(?, 0) AND correlation_id = ?"
        row = self._read_one(sql, (_text(parent_session_id), _text(correlation_id)))
        return _untext(row[0]) if row else None

    async def unfinished(self) -> list[JournalRecord]:
        await self.sync()
        return [_from_row(row) for row in self._read(f"{_SELECT} WHERE NOT {_IN_TERMINAL}", tuple(_TERMINAL))]

    async def interrupt_unfinished(
        self, now: float, make_result: MakeResult, *, keep: Collection[str] = ()
    ) -> list[str]:
        unfinished = [r for r in await self.unfinished() if r.subagent_id not in keep]
        for record in [_interrupted(r, now, make_result) for r in unfinished]:  # a raising callback changes nothing
            self.put(record)
        await self.sync()
        return [r.subagent_id for r in unfinished]

    async def sweep(self, completed_before: float) -> int:
        # Run after the pending records are written (in the same commit), so they are swept too; `SWEEP_BATCH`
        # rows a commit, the event loop (which runs the statements) free between: the first sweep after a
        # long stop may have hundreds of thousands of rows to forget.
        params = (float(completed_before), *_TERMINAL)
        swept = 0
        while True:
            count = await self._write(lambda: self._db.write(_SWEEP, (*params, SWEEP_BATCH)).rowcount)
            swept += count
            if count < SWEEP_BATCH:
                return swept

    async def holds_records(self) -> bool:
        self._check_open()
        return bool(self._pending) or self._read_one("SELECT 1 FROM lifecycle_records LIMIT 1", ()) is not None

    async def load_keys(self) -> list[KeyRowTuple]:
        self._check_open()
        sql = "SELECT kid, secret, created_at, retired_at FROM lifecycle_keys ORDER BY created_at, kid"
        return [tuple(row) for row in self._read(sql, ())]

    async def save_key(self, kid: str, secret: bytes, created_at: float, retired_at: float | None) -> None:
        await self.save_keys([(kid, secret, created_at, retired_at)])

    async def save_keys(self, rows: Collection[KeyRowTuple]) -> None:
        # One statement, in one savepoint of one commit (`flush` runs each queued statement in a transaction).
        params = [(kid, bytes(secret), float(created_at), _float(retired_at))
                  for kid, secret, created_at, retired_at in rows]
        await self._write(lambda: self._db.write_many(_SAVE_KEY, params))

    # --- Participant: what the database calls at each commit we asked for -------------------

    def flush(self) -> None:
        """Write the pending records (then any queued statement) into the open batch."""
        db = self._db
        if self._pending:
            batch, self._pending = self._pending, {}
            self._flushed, self._upto = batch, self._seq
            rows, self._refused = _encode(batch.values())
            try:
                with db.transaction():
                    _upsert(db, rows)
            except sqlite3.IntegrityError:
                # Rare (a correlation id clash): redo row by row, dropping only the offending rows.
                for row in rows:
                    try:
                        db.write(_upsert_sql(1), row)
                    except sqlite3.IntegrityError as exc:
                        kind = "conflict" if "UNIQUE" in str(exc) else "invalid"
                        self._refused.append((_untext(row[0]), f"{kind}: {exc}"))
            if self._refused and self._launches:
                self._refuse_launches_whole(db)
        else:
            self._upto = self._seq
        ops, self._ops = self._ops, []
        for index, (op, future) in enumerate(ops):
            try:
                with db.transaction():
                    self._ops_flushed.append((future, op(), None))
            except Exception as exc:
                if db.rolled_back:
                    # A full disk: SQLite rolled back the whole batch, the records above with it. Taken for
                    # this statement's own failure, the statements after it ran in a new batch that the
                    # failed commit left open, to be committed later, their callers told they had failed.
                    self._ops = ops[index:] + self._ops  # answered with this error (`committed`)
                    raise
                self._ops_flushed.append((future, None, exc))  # its own failure: the records above stand

    def committed(self, error: BaseException | None) -> None:
        batch, self._flushed = self._flushed, None
        ops, self._ops_flushed = self._ops_flushed, []
        if error is not None:
            # Its refusals fail with it: the records go back to pending, to be judged again, or are
            # dropped with their launches, told so; a later commit must not tell them again.
            self._refused = []
            if batch:
                batch.update(self._pending)  # puts made since are newer: they win
                self._pending = batch
            dropped = self._drop_launches(error)
            if dropped:
                logger.error("journal: writing failed, %d launches refused and their %d records dropped: %r",
                             len(dropped), sum(map(len, dropped)), error)
            if self._pending:  # once an episode at ERROR: an idle gateway's tries come every 30 s while it lasts
                logger.log(logging.ERROR if self._retry_delay is None else logging.WARNING,
                           "journal: writing %d records failed, will retry: %r", len(self._pending), error)
            failure = JournalError(f"Journal write failed: {error!r}", code="JOURNAL_WRITE_FAILED")
            failure.__cause__ = error
            # Statements the failed flush never reached (it raised on the records before them) are due in
            # this commit too: left queued, their callers (`save_key`, `sweep`) would wait until some later
            # put asked for a commit, in an idle gateway for good, the sweeper with them.
            unrun, self._ops = self._ops, []
            for future, _, _ in ops:
                _settle(future, exception=failure)
            for _, future in unrun:
                _settle(future, exception=failure)
            self._fail_waiters(failure)
            if self._pending:
                self._retry_later()
            return
        self._retry_delay = None
        for future, result, op_error in ops:
            if op_error is None:
                _settle(future, result=result)
            else:
                _settle(future, exception=_database_error(op_error))
        if batch:
            self.commits += 1
        self._committed = max(self._committed, self._upto)
        refused, self._refused = self._refused, []
        for subagent_id, reason in refused:
            logger.error("journal: record %s refused and dropped (%s)", subagent_id, reason)
        self._settle_waiters(refused)

    # --- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != "open":
            raise JournalError("The journal is not open.", code="JOURNAL_CLOSED")

    async def _sync(self, launch: Collection[str] | None) -> None:
        """`sync`; with ``launch``, the ids whose records a failed commit drops (`sync_launch`)."""
        self._check_open()
        if launch:
            if self._abandoned:
                self._abandoned.difference_update(launch)
            pending = self._pending
            for subagent_id in launch:  # a loop, not any(): no allocation on the launch path
                if subagent_id in pending:
                    break
            else:
                # Written already, by a commit whose caller was cancelled before it heard (`Supervisor`
                # asks again): a later commit's failure is not theirs, nor another launch's refusal.
                if self._unheard:
                    self._raise_unheard(launch)
                if self._unreported:
                    self._raise_unreported(launch)
                return
        if self._committed < self._seq:
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            if launch is not None:
                self._launches[waiter] = tuple(launch)
            try:
                self._request()
                await waiter
            except asyncio.CancelledError:
                if launch is not None and waiter.cancelled():
                    self._abandoned.update(launch)  # it asks again to hear how its commit ended
                elif (launch is not None and waiter.done() and not waiter.cancelled() and waiter.exception()
                        and not any(sid in self._pending for sid in launch)):
                    # Told its launch was refused (its records dropped), but its caller was cancelled
                    # before it woke to hear it: asking again, it must not take them for written.
                    self._unheard.update(dict.fromkeys(launch, waiter.exception()))
                raise
            except JournalError:
                if launch is not None and self._dropped:  # heard: its caller forgets the children now
                    self._dropped.difference_update(launch)
                raise
            finally:
                self._launches.pop(waiter, None)
        if self._unreported:
            self._raise_unreported(launch)

    def _request(self) -> None:
        try:
            self._db.request(self)
        except sqlite3.Error as exc:  # the database was closed under us, or could not commit
            # As a failed commit does (`committed`): the launches waiting are refused and their records
            # dropped, else a later commit would write the PENDING rows of children their callers were told
            # were never launched, for the next start to report INTERRUPTED; and the statements queued are
            # answered, else `save_key` or a sweep would wait for a commit nobody asked for.
            dropped = self._drop_launches(exc)
            if dropped:
                logger.error("journal: asking for a commit failed, %d launches refused and their %d records"
                             " dropped: %r", len(dropped), sum(map(len, dropped)), exc)
            error = _database_error(exc)
            unrun, self._ops = self._ops, []
            for _, future in unrun:
                _settle(future, exception=error)
            self._fail_waiters(error)

    async def _write(self, op: Callable[[], T]) -> T:
        """Run a write statement in the next commit (never waiting for a lock on the loop);
        return its result once committed."""
        self._check_open()
        future = asyncio.get_running_loop().create_future()
        self._ops.append((op, future))
        self._request()
        return await future

    def _read(self, sql: str, params: tuple) -> list[tuple]:
        try:
            return self._db.read(sql, params)
        except sqlite3.Error as exc:
            raise _database_error(exc) from exc

    def _read_one(self, sql: str, params: tuple) -> tuple | None:
        try:
            return self._db.read_one(sql, params)
        except sqlite3.Error as exc:
            raise _database_error(exc) from exc

    def _create_schema(self, version: int) -> None:
        if version == 1:  # a journal from before stop requests were kept: its rows have none
            self._db.write("ALTER TABLE lifecycle_records ADD COLUMN stop_reason TEXT")
        if version in (1, 2):  # from before unsent steers were kept: likewise
            self._db.write("ALTER TABLE lifecycle_records ADD COLUMN steers TEXT")
        if version in (1, 2, 3):  # from before jobs were kept until their engine held them: likewise
            self._db.write("ALTER TABLE lifecycle_records ADD COLUMN job TEXT")
        if version in (1, 2, 3, 4):  # from before inline children were told apart: theirs are followed on
            self._db.write("ALTER TABLE lifecycle_records ADD COLUMN inline INTEGER NOT NULL DEFAULT 0")
        for statement in _SCHEMA:
            self._db.write(statement)
        self._db.write(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _settle_waiters(self, refused: list[tuple[str, str]]) -> None:
        """Answer the sync calls of this commit. A launch hears only the refusals of its own
        records: another record's refusal is no reason to call its committed children not
        launched. The plain syncs hear the refusals no launch was told of; with none waiting,
        those are kept for the next sync."""
        waiters, self._waiters = self._waiters, []
        if not refused:
            for waiter in waiters:
                if not waiter.done():  # its sync was cancelled
                    waiter.set_result(None)
            return
        for waiter, ids in self._launches.items():
            if waiter.cancelled():  # its caller gave up before this commit: it asks again
                self._abandoned.update(ids)
        untold = dict(refused)
        plain = []
        for waiter in waiters:
            if waiter.done():
                continue
            ids = self._launches.get(waiter)
            if ids is None:
                plain.append(waiter)
                continue
            mine = [(sid, untold.pop(sid)) for sid in ids if sid in untold]
            if mine:
                waiter.set_exception(_refusal(mine))
            else:
                waiter.set_result(None)
        rest = [r for r in untold.items() if r[0] not in self._abandoned]
        if len(rest) < len(untold):  # kept for the launch that stopped waiting, when it asks again
            self._unreported.extend(r for r in untold.items() if r[0] in self._abandoned)
        for waiter in plain:
            if rest:
                waiter.set_exception(_refusal(rest))
            else:
                waiter.set_result(None)
        if rest and not plain:
            self._unreported.extend(rest)

    def _fail_waiters(self, error: JournalError) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _settle(waiter, exception=error)


def _upsert(db: SqliteDatabase, rows: list[tuple]) -> None:
    start = 0
    for size in _CHUNKS:
        while len(rows) - start >= size:
            db.write(_upsert_sql(size), list(itertools.chain.from_iterable(rows[start : start + size])))
            start += size


def _encode(records: Iterable[JournalRecord]) -> tuple[list[tuple], list[tuple[str, str]]]:
    rows, refused = [], []
    for record in records:
        try:
            rows.append(_to_row(record))
        except Exception as exc:  # this record's own fault; retrying could never help
            refused.append((str(record.subagent_id), f"unserialisable: {exc!r}"))
    return rows, refused


def _settle(future: asyncio.Future, *, result: Any = None, exception: BaseException | None = None) -> None:
    if future.done():
        return
    if exception is None:
        future.set_result(result)
    else:
        future.set_exception(exception)


def _database_error(exc: BaseException) -> JournalError:
    error = JournalError(f"Journal database error: {exc}")
    error.__cause__ = exc
    return error
