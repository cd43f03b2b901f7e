"""The state database's connection: WAL, group commit on the event loop, and `durable()`.

Every call runs synchronously on the caller's thread, the event loop: each write is
one small indexed statement, or a few in one savepoint. Writes are group-committed:
all writes made during one turn of the event loop share one transaction, committed
by a callback at the next turn (about 0.1-0.3 ms per commit; WAL with
``synchronous=NORMAL`` does not fsync on commit). A hop to a worker thread and back
would cost as much as the write. The cost is that a lock held by another writer of
the file (``busy_timeout`` 5 s) can stall the loop briefly; WAL checkpoints, which
take tens of milliseconds, run on a worker thread while the gateway runs
(`gateway.store.checkpointer`). Use one `Database` from one thread.

Durability: a committed row survives a process crash; a power cut may lose the last
commits (``synchronous=NORMAL``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError

log = logging.getLogger("gateway.store")


class StoreError(GatewayError):
    """The state database is unusable (e.g. written by a newer build), or a commit failed."""


def to_text(value: str | None) -> str | bytes | None:
    """A str sqlite3 can bind. It refuses a str holding a lone surrogate (models emit "\\ud800"
    escapes): such text goes in as surrogatepass bytes, and `from_text` turns it back into the same str."""
    if value is None or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def from_text(value: Any) -> Any:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


class Database:
    """One autocommit connection (``isolation_level=None``) whose writes `write` groups into
    one transaction per loop turn; `transaction` makes several writes stand or fall together."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._tx_depth = 0
        self._durable: list[asyncio.Future[None]] = []
        self._commit_due = False
        self.path.parent.mkdir(parents=True, exist_ok=True)  # the state dir may not exist yet
        self.conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=5000")
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        """Commit what is pending and close the connection. Idempotent."""
        try:
            self.commit()
        except sqlite3.ProgrammingError:  # already closed
            pass
        self.conn.close()

    def automatic_checkpoints(self, enabled: bool) -> None:
        """Let commits on this connection checkpoint the WAL themselves (SQLite's default), or
        not, while `gateway.store.checkpointer` does it off the event loop."""
        self.conn.execute(f"PRAGMA wal_autocheckpoint={1000 if enabled else 0}")

    def read(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def commit(self) -> None:
        """Commit the current batch now. The outbox calls this right before a send, so a
        message is always durably journaled before it can reach a platform."""
        waiters, self._durable = self._durable, []
        try:
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")
        except BaseException as exc:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(StoreError(f"committing the state database failed: {exc}"))
            raise
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def durable(self) -> None:
        """Return once every write made so far is committed: at the batch's commit on the next
        loop turn, shared by every caller of this turn. Await it before acknowledging anything
        to a platform, so an acknowledged event is never lost in a crash."""
        if not self.conn.in_transaction:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._durable.append(waiter)
        self._schedule_commit(loop)  # normally already due; not after a commit that failed
        await waiter

    def write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run a write inside the current batch. Without a running loop nothing would commit
        later, so the write commits at once."""
        batched = self._begin()
        cursor = self.conn.execute(sql, params)
        self._end(batched)
        return cursor

    def write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        batched = self._begin()
        self.conn.executemany(sql, rows)
        self._end(batched)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes that stand or fall together, inside the current batch."""
        batched = self._begin()
        self.conn.execute("SAVEPOINT gateway_tx")
        self._tx_depth += 1
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO gateway_tx")
            self.conn.execute("RELEASE gateway_tx")
            raise
        else:
            self.conn.execute("RELEASE gateway_tx")
        finally:
            self._tx_depth -= 1
        self._end(batched)

    def _begin(self) -> bool:
        """Open the batch if none is open; False when there is no event loop to commit it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
        if loop is not None:
            self._schedule_commit(loop)  # also after a failed commit left the batch open
        return loop is not None

    def _end(self, batched: bool) -> None:
        if not batched and not self._tx_depth:
            self.commit()

    def _schedule_commit(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._commit_due:
            self._commit_due = True
            loop.call_soon(self._due_commit)

    def _due_commit(self) -> None:
        self._commit_due = False
        try:
            self.commit()
        except sqlite3.Error as exc:  # its waiters were told; the batch stays open for the next try
            log.error("committing the state database failed; retrying with the next write: %s", exc)
