"""WAL checkpoints on a worker thread, never on the event loop.

SQLite's automatic checkpoint runs inside whichever commit pushes the write-ahead
log past 1,000 pages: it copies the log into the database file and syncs it,
which takes tens of milliseconds. The gateway's store commits on the event
loop, so every such commit stalled every chat at once. While the gateway runs,
its connection checkpoints nothing itself; this task checkpoints the file from
its own connection on a worker thread every second (PASSIVE: it never blocks a
writer or reader, and copies what it can).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lifecycle import SqliteDatabase

log = logging.getLogger("gateway.store")

INTERVAL_SECONDS = 1.0


async def run_forever(path: Path, interval: float = INTERVAL_SECONDS) -> None:
    """Checkpoint ``path`` every ``interval`` seconds until cancelled."""
    loop = asyncio.get_running_loop()
    # One thread owns the connection: a cancelled checkpoint still finishes before the close.
    worker = ThreadPoolExecutor(1, thread_name_prefix="switchboard-checkpoint")
    conn = await loop.run_in_executor(worker, _connect, path)
    try:
        while True:
            await asyncio.sleep(interval)
            try:
                await loop.run_in_executor(worker, checkpoint, conn)
            except sqlite3.Error as exc:
                log.warning("WAL checkpoint failed: %s", exc)
    finally:
        worker.submit(conn.close)
        worker.shutdown(wait=False)


class Checkpointer:
    """While started, the database's own commits checkpoint nothing; `run_forever` does it.
    `stop` hands checkpoints back to SQLite. Both idempotent."""

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
            self._task = asyncio.ensure_future(run_forever(self._db.path, self._interval))

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            self._db.automatic_checkpoints(True)


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)


def checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(busy, pages in the log, pages checkpointed), as ``PRAGMA wal_checkpoint`` reports them."""
    return tuple(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
