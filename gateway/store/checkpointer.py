"""WAL checkpoints on a worker thread, never on the event loop.

SQLite's automatic checkpoint runs inside whichever commit pushes the write-ahead
log past 1,000 pages: it copies the log into the database file and syncs it,
which takes tens of milliseconds. The gateway's store commits on the event
loop, so every such commit stalled every chat at once. While the gateway runs,
its connection checkpoints nothing itself; this task checkpoints the file from
its own connection on a worker thread every second (PASSIVE: it never blocks a
writer or reader, and copies what it can).

With automatic checkpoints off, nothing but this task keeps the log from growing
until the disk is full. So the task outlives its own failures: an SQLite error
(a full disk) is retried at the next second; anything else is logged once with
its traceback and retried on a fresh connection, backing off to once a minute.
Should the task end anyway, `Checkpointer` hands checkpoints back to SQLite, and `ended`
says so to ``/metrics`` (``switchboard_wal_checkpointer_up``), `health` to ``/healthz``: the log
no longer grows unbounded, but the commits that checkpoint it stall every chat again.

No checkpoint copies the log past the oldest read transaction of another process (an ``sqlite3``
shell left after ``BEGIN; SELECT …``, a backup, a database browser): while one stays open, the log
grows with every write. Held back for `HELD_BACK_SECONDS`, the task says so once, and once more
when its checkpoints catch up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lifecycle import SqliteDatabase

log = logging.getLogger("gateway.store")

INTERVAL_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0
HELD_BACK_SECONDS = 300.0
"""How long checkpoints stay behind the log before the task says why: a reader that checkpoints on its own
schedule (litestream) holds them back for a minute at a time."""

ENDED_REASON = ("the WAL checkpointer ended: SQLite's own commits checkpoint the log again, stalling every chat"
                " now and then; a restart mends it")
UNCHECKED_REASON = ("the WAL checkpointer ended and checkpoints could not be handed back to SQLite: the log grows"
                    " until a restart")

_ENDED: weakref.WeakKeyDictionary[SqliteDatabase, tuple[str, float]] = weakref.WeakKeyDictionary()
"""The databases whose checkpointer ended by itself, with why it matters and since when. By database: what
reports it (the metrics, ``/healthz``) holds the store, not the gateway's checkpointer."""


def ended(db: SqliteDatabase) -> bool:
    """Whether the checkpointer started on ``db`` ended other than by its `Checkpointer.stop`."""
    return db in _ENDED


def health(db: SqliteDatabase) -> dict[str, object]:
    """As ``/healthz`` shows it: ``ok``, or ``ended`` with what that costs and since when (epoch seconds)."""
    if (why := _ENDED.get(db)) is None:
        return {"status": "ok", "reason": None, "since": None}
    return {"status": "ended", "reason": why[0], "since": why[1]}


async def run_forever(path: Path, interval: float = INTERVAL_SECONDS, *,
                      sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
    """Checkpoint ``path`` every ``interval`` seconds until cancelled; no exception but the
    cancellation ends it. ``sleep`` waits between tries (a test's fake clock)."""
    loop = asyncio.get_running_loop()
    # One thread owns the connection: a cancelled checkpoint (or connect) still finishes before the close.
    worker = ThreadPoolExecutor(1, thread_name_prefix="switchboard-checkpoint")
    held: list[sqlite3.Connection] = []  # the connection, opened and closed on the worker only
    delay = interval
    failing = False
    held_back = 0.0  # seconds the checkpoints have left part of the log behind, all of them
    try:
        while True:
            await sleep(delay)
            try:
                busy, pages, copied = await loop.run_in_executor(worker, _checkpoint_held, held, path)
            except sqlite3.Error as exc:
                # Expected while the disk is full: cheap to retry, and the repeat filter folds the lines.
                log.warning("WAL checkpoint failed: %s", exc)
                delay = interval
                continue
            except Exception:
                # A failure nobody foresaw must not end the only thing checkpointing the log:
                # one traceback per run of failures, then quieter and slower tries on a new connection.
                if not failing:
                    log.exception("WAL checkpoint failed unexpectedly; retrying with backoff")
                failing = True
                worker.submit(_close_held, held)
                delay = min(max(delay, interval) * 2, max(MAX_BACKOFF_SECONDS, interval))
                continue
            if failing:
                log.info("WAL checkpoints resumed")
                failing = False
            if busy:  # another connection checkpointing (litestream): this one tells nothing either way
                pass
            elif copied < pages:
                held_back += delay
                if held_back - delay < HELD_BACK_SECONDS <= held_back:
                    log.warning("WAL checkpoints have been held back for %.0f s: another process has a read"
                                " transaction open on %s (an sqlite3 shell after BEGIN, a backup, a database browser),"
                                " and the log grows with every write (%s now); end that transaction (COMMIT, or"
                                " close the program)", held_back, path, _wal_size(path))
            elif held_back:
                if held_back >= HELD_BACK_SECONDS:
                    log.info("WAL checkpoints caught up after %.0f s held back", held_back)
                held_back = 0.0
            delay = interval
    finally:
        worker.submit(_close_held, held)
        worker.shutdown(wait=False)


def _checkpoint_held(held: list[sqlite3.Connection], path: Path) -> tuple[int, int, int]:
    if not held:
        held.append(_connect(path))
    return checkpoint(held[0])


def _wal_size(path: Path) -> str:
    try:
        return f"{os.stat(f'{path}-wal').st_size / 1e6:.0f} MB"
    except OSError:
        return "size unknown"


def _close_held(held: list[sqlite3.Connection]) -> None:
    while held:
        held.pop().close()


class Checkpointer:
    """While started, the database's own commits checkpoint nothing; `run_forever` does it.
    `stop` hands checkpoints back to SQLite, and so does the task's end for any other reason
    (else the log would grow until the disk is full). Both idempotent."""

    def __init__(self, db: SqliteDatabase, interval: float = INTERVAL_SECONDS) -> None:
        self._db = db
        self._interval = interval
        self._task: asyncio.Task | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._db.automatic_checkpoints(False)
            _ENDED.pop(self._db, None)
            self._task = asyncio.ensure_future(run_forever(self._db.path, self._interval))
            self._task.add_done_callback(self._ended)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            self._db.automatic_checkpoints(True)

    def _ended(self, task: asyncio.Task) -> None:
        if task is not self._task:
            return  # stopped: `stop` hands checkpoints back itself
        _ENDED[self._db] = (ENDED_REASON, self._db.clock.time())
        if not task.cancelled():
            log.error("WAL checkpointer ended; SQLite checkpoints the log itself again", exc_info=task.exception())
        try:
            self._db.automatic_checkpoints(True)
        except sqlite3.ProgrammingError:
            pass  # closed: the next connection to the file checkpoints automatically anyway
        except sqlite3.Error:
            log.exception("could not hand WAL checkpoints back to SQLite")
            _ENDED[self._db] = (UNCHECKED_REASON, _ENDED[self._db][1])


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)


def checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(busy, pages in the log, pages checkpointed), as ``PRAGMA wal_checkpoint`` reports them."""
    return tuple(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
