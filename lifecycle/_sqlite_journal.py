"""`SqliteJournal`: the lifecycle journal on one SQLite file in WAL mode, with group commit.

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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lifecycle._contract import SubagentState
from lifecycle._journal import (
    _TERMINAL,
    SCHEMA_VERSION,
    JournalError,
    JournalRecord,
    KeyRowTuple,
    MakeResult,
    _interrupted,
)

logger = logging.getLogger("lifecycle._journal")

_COLUMNS = (
    "subagent_id, parent_session_id, correlation_id, handle, state,"
    " created_at, updated_at, started_at, completed_at, result, goal"
)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS lifecycle_records (
        subagent_id TEXT NOT NULL PRIMARY KEY, parent_session_id TEXT, correlation_id TEXT,
        handle TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        started_at REAL, completed_at REAL, result TEXT, goal TEXT NOT NULL)""",
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
_ROW_MARKS = "(" + ",".join("?" * 11) + ")"
# Rows per statement. executemany would step once per row, releasing and re-taking the GIL each
# time; while the event loop is busy every re-take waits for a switch interval (the "convoy
# effect") and the writer crawls. Multi-row statements need one GIL hand-off per chunk. Fixed
# sizes keep the set of statements small enough for sqlite3's statement cache.
_CHUNKS = (512, 64, 8, 1)


@functools.cache
def _upsert_sql(rows: int) -> str:
    values = ",".join([_ROW_MARKS] * rows)
    return f"INSERT INTO lifecycle_records ({_COLUMNS}) VALUES {values} ON CONFLICT(subagent_id) DO UPDATE SET {_UPDATE_ALL}"


def _upsert(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    start = 0
    for size in _CHUNKS:
        while len(rows) - start >= size:
            conn.execute(_upsert_sql(size), list(itertools.chain.from_iterable(rows[start : start + size])))
            start += size


_SELECT = f"SELECT {_COLUMNS} FROM lifecycle_records"
_IN_TERMINAL = "state IN (" + ",".join("?" * len(_TERMINAL)) + ")"
_RETRY_FIRST, _RETRY_MAX = 0.05, 2.0

def _text(value: Any) -> str | bytes | None:
    # sqlite3 cannot bind a str holding a lone surrogate (models do emit "\ud800" escapes), and a
    # record that can never be written would stall the journal; such text goes in as a BLOB.
    if value is None or (type(value) is str and value.isascii()):
        return value
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value if type(value) is str else encoded.decode("utf-8")  # str subclasses bind as plain text


def _untext(value: Any) -> Any:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _to_row(r: JournalRecord) -> tuple:
    # Only str/bytes/float/None reach sqlite, so binding itself cannot fail (a huge int would).
    state = r.state.value if isinstance(r.state, SubagentState) else r.state
    return (_text(r.subagent_id), _text(r.parent_session_id), _text(r.correlation_id),
            _text(r.handle), _text(state), float(r.created_at), float(r.updated_at),
            _float(r.started_at), _float(r.completed_at), _text(r.result), _text(r.goal))  # fmt: skip


def _from_row(row: tuple) -> JournalRecord:
    return JournalRecord(*map(_untext, row[:5]), row[5], row[6], row[7], row[8], _untext(row[9]), _untext(row[10]))


class SqliteJournal:
    """`Journal` on one SQLite file in WAL mode, with group commit.

    One connection lives on one dedicated worker thread; the event loop never
    touches sqlite. `put` adds to a pending batch and wakes the writer task,
    which hands the whole batch to the worker (one transaction, multi-row upserts)
    while new puts gather in the next batch. A failed batch is logged, merged
    back under newer puts and retried with backoff; waiting `sync` calls raise.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0):
        self._path = os.fspath(path)
        self._busy_timeout = busy_timeout
        self._state = "new"  # -> "open" -> "closed"
        self._conn: sqlite3.Connection | None = None  # worker thread only
        self._pending: dict[str, JournalRecord] = {}
        self._inflight: dict[str, JournalRecord] = {}  # the batch being written: still readable
        self._seq = 0  # puts so far
        self._committed = 0  # every put numbered <= this is committed (or refused and reported)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._unreported: JournalError | None = None  # a refusal no sync was waiting for
        self.commits = 0
        """Batches committed by the writer; for tests and metrics."""

    async def open(self) -> None:
        if self._state == "open":
            return
        if self._state == "closed":
            raise JournalError("The journal is closed.", code="JOURNAL_CLOSED")
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="switchboard-journal")
        try:
            await self._call(self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            raise
        self._wake = asyncio.Event()
        self._writer = self._loop.create_task(self._write_loop(), name="switchboard-journal-writer")
        self._writer.add_done_callback(self._writer_stopped)
        self._state = "open"

    async def close(self) -> None:
        if self._state != "open":
            self._state = "closed"
            return
        try:
            await self.sync()
        finally:
            self._state = "closed"
            self._writer.cancel()
            await asyncio.wait([self._writer])
            if self._pending:
                logger.error("journal: closed with %d records unwritten", len(self._pending))
            await self._loop.run_in_executor(self._executor, self._disconnect)
            self._executor.shutdown(wait=False)  # its only job is done; do not join on the loop

    def put(self, record: JournalRecord) -> None:
        if self._state != "open":
            raise JournalError("The journal is not open.", code="JOURNAL_CLOSED")
        self._pending[record.subagent_id] = record
        self._seq += 1
        if not self._wake.is_set():
            self._wake.set()

    async def sync(self) -> None:
        self._check_open()
        if self._committed < self._seq:
            if self._writer.done():
                raise JournalError("The journal writer has stopped.", code="JOURNAL_WRITE_FAILED")
            waiter = self._loop.create_future()
            self._waiters.append((self._seq, waiter))
            self._wake.set()
            await waiter
        if self._unreported is not None:
            error, self._unreported = self._unreported, None
            raise error

    async def get(self, subagent_id: str) -> JournalRecord | None:
        self._check_open()
        record = self._pending.get(subagent_id) or self._inflight.get(subagent_id)
        if record is not None:
            return record
        rows = await self._call(self._query, f"{_SELECT} WHERE subagent_id = ?", (_text(subagent_id),))
        return _from_row(rows[0]) if rows else None

    async def find_correlation(self, parent_session_id: str | None, correlation_id: str) -> str | None:
        self._check_open()
        # A linear scan: the unflushed batches are small, and only launches with a correlation id look.
        for batch in (self._pending, self._inflight):
            for r in batch.values():
                if r.correlation_id == correlation_id and r.parent_session_id == parent_session_id:
                    return r.subagent_id
        sql = "SELECT subagent_id FROM lifecycle_records WHERE IFNULL(parent_session_id, 0) = IFNULL(?, 0) AND correlation_id = ?"
        rows = await self._call(self._query, sql, (_text(parent_session_id), _text(correlation_id)))
        return _untext(rows[0][0]) if rows else None

    async def unfinished(self) -> list[JournalRecord]:
        await self.sync()
        rows = await self._call(self._query, f"{_SELECT} WHERE NOT {_IN_TERMINAL}", tuple(_TERMINAL))
        return [_from_row(row) for row in rows]

    async def interrupt_unfinished(
        self, now: float, make_result: MakeResult, *, keep: Collection[str] = ()
    ) -> list[str]:
        unfinished = [r for r in await self.unfinished() if r.subagent_id not in keep]
        for record in [_interrupted(r, now, make_result) for r in unfinished]:  # a raising callback changes nothing
            self.put(record)
        await self.sync()
        return [r.subagent_id for r in unfinished]

    async def sweep(self, completed_before: float) -> int:
        await self.sync()  # so records still pending are swept too
        sql = f"DELETE FROM lifecycle_records WHERE completed_at < ? AND {_IN_TERMINAL}"
        return await self._call(self._execute, sql, (float(completed_before), *_TERMINAL))

    async def load_keys(self) -> list[KeyRowTuple]:
        self._check_open()
        sql = "SELECT kid, secret, created_at, retired_at FROM lifecycle_keys ORDER BY created_at, kid"
        return [tuple(row) for row in await self._call(self._query, sql, ())]

    async def save_key(self, kid: str, secret: bytes, created_at: float, retired_at: float | None) -> None:
        self._check_open()
        sql = (
            "INSERT INTO lifecycle_keys (kid, secret, created_at, retired_at) VALUES (?,?,?,?) ON CONFLICT(kid)"
            " DO UPDATE SET secret=excluded.secret, created_at=excluded.created_at, retired_at=excluded.retired_at"
        )
        await self._call(self._execute, sql, (kid, bytes(secret), float(created_at), _float(retired_at)))

    # --- event loop side -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != "open":
            raise JournalError("The journal is not open.", code="JOURNAL_CLOSED")

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await self._loop.run_in_executor(self._executor, fn, *args)
        except sqlite3.Error as exc:
            raise JournalError(f"Journal database error: {exc}") from exc

    async def _write_loop(self) -> None:
        delay = _RETRY_FIRST
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch, self._pending = self._pending, {}
                self._inflight, upto = batch, self._seq
                try:
                    # Rows are encoded here, on the loop: the worker then runs sqlite with the GIL
                    # released instead of fighting the loop for it row by row.
                    rows, refused = _encode(batch.values())
                    refused += await self._loop.run_in_executor(self._executor, self._write, rows)
                except BaseException as exc:
                    batch.update(self._pending)  # puts made during the attempt are newer: they win
                    self._pending, self._inflight = batch, {}
                    if not isinstance(exc, Exception):
                        raise
                    logger.error("journal: writing %d records failed, will retry: %r", len(batch), exc)
                    self._settle(failure=exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _RETRY_MAX)
                    continue
                self._inflight, self._committed = {}, upto
                self.commits += 1
                delay = _RETRY_FIRST
                for subagent_id, reason in refused:
                    logger.error("journal: record %s refused and dropped (%s)", subagent_id, reason)
                self._settle(refused=refused)
            self._settle()

    def _writer_stopped(self, writer: asyncio.Task[None]) -> None:
        # Outside close() (loop shutdown, a bug) no sync may be left waiting forever.
        error = None if writer.cancelled() else writer.exception()
        if error is not None:
            logger.error("journal: writer crashed", exc_info=error)
        self._settle(failure=error or RuntimeError("journal writer stopped"))

    def _settle(self, *, failure: Exception | None = None, refused: list[tuple[str, str]] = ()) -> None:
        """Answer the sync calls this outcome decides: covered ones succeed (or hear of refusals), others fail."""
        keep, told = [], False
        for target, waiter in self._waiters:
            if waiter.done():  # its sync was cancelled
                continue
            if target <= self._committed:
                told = told or bool(refused)
                waiter.set_exception(_refusal(refused)) if refused else waiter.set_result(None)
            elif failure is not None:
                error = JournalError(f"Journal write failed: {failure!r}", code="JOURNAL_WRITE_FAILED")
                error.__cause__ = failure
                waiter.set_exception(error)
            else:
                keep.append((target, waiter))
        self._waiters = keep
        if refused and not told:
            self._unreported = _refusal(refused)

    # --- worker thread side ----------------------------------------------------------

    def _connect(self) -> None:
        conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalError(f"Journal schema {version} is newer than this build ({SCHEMA_VERSION}).")
            if version < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        assert self._conn is not None
        return self._conn.execute(sql, params).fetchall()

    def _execute(self, sql: str, params: tuple) -> int:
        assert self._conn is not None
        return self._conn.execute(sql, params).rowcount

    def _write(self, rows: list[tuple]) -> list[tuple[str, str]]:
        """Commit one batch in one transaction; returns the refused records as (id, reason)."""
        conn = self._conn
        assert conn is not None
        refused: list[tuple[str, str]] = []
        try:
            self._transaction(conn, lambda: _upsert(conn, rows))
        except sqlite3.IntegrityError:
            # Rare (a correlation id clash): redo row by row, dropping only the offending rows.
            def one_by_one() -> None:
                for row in rows:
                    try:
                        conn.execute(_upsert_sql(1), row)
                    except sqlite3.IntegrityError as exc:
                        kind = "conflict" if "UNIQUE" in str(exc) else "invalid"
                        refused.append((_untext(row[0]), f"{kind}: {exc}"))

            self._transaction(conn, one_by_one)
        return refused

    @staticmethod
    def _transaction(conn: sqlite3.Connection, body: Callable[[], Any]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            body()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _encode(records: Iterable[JournalRecord]) -> tuple[list[tuple], list[tuple[str, str]]]:
    rows, refused = [], []
    for record in records:
        try:
            rows.append(_to_row(record))
        except Exception as exc:  # this record's own fault; retrying could never help
            refused.append((str(record.subagent_id), f"unserialisable: {exc!r}"))
    return rows, refused


def _refusal(refused: list[tuple[str, str]]) -> JournalError:
    ids = tuple(subagent_id for subagent_id, _ in refused)
    code = "JOURNAL_CONFLICT" if all(r.startswith("conflict") for _, r in refused) else "JOURNAL_REJECTED"
    return JournalError(f"Journal refused records: {', '.join(ids)}.", code=code, subagent_ids=ids)
