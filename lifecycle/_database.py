"""`SqliteDatabase`: one SQLite connection in WAL mode, with group commit on the event loop.

The state file (``switchboard.db``) is written by the gateway's store and the
lifecycle journal; both can run on one `SqliteDatabase`. Every statement runs
synchronously on the caller's thread, the event loop: reads take tens of
microseconds, and a hop to a worker thread and back would cost more than the
statement. Writes are group-committed: everything written during one turn of
the loop shares one transaction, committed by a callback at the next turn
(WAL with ``synchronous=NORMAL`` does not fsync on commit). Two ways to write:

- `write` / `write_many` / `transaction`: the statement runs now, in the open
  batch (for callers that need its result, such as a row count). Opening the
  batch waits for another connection's write lock, up to ``busy_timeout``; once
  a wait was in vain, not again until a batch opens: the event loop waits, every
  chat with it, and a lock held for minutes (a transaction another process left
  open) would hold every write for ``busy_timeout`` in turn. Said once (`_held`),
  and by `write_lock_held_since` until it ends (``/healthz``, ``/metrics``).
- `request(participant)`: a participant (the journal) keeps its own pending
  rows and writes them in `Participant.flush`, right before the commit, in a
  savepoint of its own; it hears the outcome in `Participant.committed`. A
  batch opened only for participants never waits for a lock on the loop: while
  another connection holds it, the commit is retried a few milliseconds later,
  until ``busy_timeout`` has passed.

A commit that fails is reported to everyone waiting for it, and retried with
the next write or wait. Its batch is never left open for later writes to join:
one SQLite refused without rolling it back (a lock, a deferred constraint) is
rolled back, its writes written again as below (a broken constraint's dropped,
as they could never commit). A full disk (or an I/O error) makes SQLite roll the whole
batch back, whichever statement or commit met it: the writes of the batch that had
succeeded are kept and written again, in order, before anything reads or writes
after them (until then reads and writes raise), so no write its caller took for
done is lost unheard. They are also tried again on their own, on the event loop, backing
off up to ``lost_retry``'s bound: in an idle gateway they would otherwise stay in memory
only until the next use, and be lost to a crash meanwhile. Durability: a committed row survives a process crash;
a power cut may lose the last commits. Use one `SqliteDatabase` from one
thread and one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from agent._clock import SYSTEM_CLOCK, Clock

log = logging.getLogger("lifecycle.database")

_RETRY_FIRST, _RETRY_MAX = 0.001, 0.05
RECOVERY_SECONDS = 30.0
"""How long writes must go through, none refused, before a file that could not be written counts
as written again: on a nearly full disk a commit now and then slips through, and health that
cleared at each would flip between up and down."""
WAL_KEPT_BYTES = 32 * 1024 * 1024
"""The size the write-ahead log's file is cut back to once a checkpoint has emptied it (``journal_size_limit``):
a burst (thousands of turns at once) grew it by hundreds of megabytes, which the file then kept for the life of
the process, though the log inside it was empty again."""
_STORAGE = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
"""Primary result codes of a file that cannot be written (a full disk, a failing device), as
against a statement's own failure (a constraint, a lock another connection holds)."""


class Participant(Protocol):
    """Something that writes its own pending rows into each commit it asked for."""

    def flush(self) -> None:
        """Write pending rows into the open batch. Raising rolls back what it wrote (its own
        savepoint) without touching anyone else's writes; it then keeps its rows."""

    def committed(self, error: BaseException | None) -> None:
        """After the commit: None when everything `flush` wrote is durable; else the error of
        the flush or of the commit (what it wrote is not durable)."""


class SqliteDatabase:
    """An open connection to one SQLite file (created with its directory if missing)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0,
                 lost_retry: tuple[float, float] = (0.5, 30.0), clock: Clock = SYSTEM_CLOCK,
                 recovery_seconds: float = RECOVERY_SECONDS) -> None:
        """``lost_retry``: seconds before writes a full disk rolled back are first tried again on
        their own, and the most between two tries (the wait doubles). ``clock`` and
        ``recovery_seconds``: see `write_error`."""
        self.path = Path(path)
        self.clock = clock
        self.recovery_seconds = recovery_seconds
        self.busy_timeout = busy_timeout
        self.lost_retry = lost_retry
        # Conversations and handle keys live here: what this creates is its owner's alone, whatever
        # the umask (SQLite gives the -wal and -shm files the database's mode). What exists keeps
        # the mode its owner chose.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # whatever is there, SQLite says what is wrong with it
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        # Autocommit mode (isolation_level=None): batches are explicit BEGIN ... COMMIT.
        conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn
        self._tx_depth = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._due: dict[Participant, None] = {}  # an ordered set
        self._commit_due = False
        self._committing = False
        self._locked_since: float | None = None
        self._retry_delay = _RETRY_FIRST
        self._held_since: float | None = None
        """``clock.monotonic()`` of the first wait for another connection's write lock that was in vain, while no
        batch has opened since: that connection still holds it, as far as anyone can tell."""
        self._held_at: float | None = None
        """The same moment in epoch seconds (``clock.time()``), for `write_lock_held_since`."""
        self._redo: list[tuple[str, Any, bool]] = []
        """The open batch's writes (participants' aside: they flush again), to write again when lost."""
        self._lost = False
        """SQLite rolled the batch back (a full disk): `_redo` must be written again first."""
        self._dropped: BaseException | None = None
        """The error of the latest commit whose batch's writes were dropped, not kept (`dropped`)."""
        self._rewrite: asyncio.TimerHandle | None = None
        self._rewrite_delay = lost_retry[0]
        self.commits = 0
        """Transactions committed; for tests and metrics."""
        self._write_error: str | None = None
        self.write_error_since: float | None = None
        """When `write_error` began (epoch seconds, ``clock.time()``)."""
        self._refused_at = 0.0
        """``clock.monotonic()`` of the latest write refused for the file."""
        self._written_since = False
        """A commit went through since that refusal."""

    @property
    def closed(self) -> bool:
        return self._conn is None

    @property
    def write_error(self) -> str | None:
        """Why the file cannot be written (``database or disk is full``), from the first write SQLite
        refused for it (not a statement's own failure) until writes have gone through for
        ``recovery_seconds`` with none refused (a commit since the last refusal, and that long
        since it); None while it can. One episode logs one ERROR as it begins and one INFO as it
        ends, when a commit or a read of this property finds it over."""
        if self._write_error is not None:
            self._check_recovered()
        return self._write_error

    @property
    def write_lock_held_since(self) -> float | None:
        """When (epoch seconds, ``clock.time()``) a wait for another connection's write lock was first in vain
        (a transaction another process left open), while that connection still holds it; None otherwise.
        Meanwhile every write is refused at once. A read while no batch is open tries the lock without waiting
        and gives it back at once, so it finds the lock freed (and logs so) with no write to find it: an idle
        gateway's ``/healthz`` does not go on showing a lock its holder has let go of."""
        conn = self._conn
        if self._held_since is not None and conn is not None and not conn.in_transaction:
            try:
                if self._begin_without_waiting() is None:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # a file that cannot be read is `write_error`'s to tell; the lock stays as last found
        return self._held_at

    @property
    def rolled_back(self) -> bool:
        """SQLite rolled the open batch back (a full disk, an I/O error), and its writes are not written
        again yet: a write that failed so took every write of the batch with it, not only its own."""
        return self._lost

    # -- text that always binds ---------------------------------------------------------

    @staticmethod
    def text(value: str | None) -> str | bytes | None:
        """``value`` as sqlite3 can bind it: a str holding a lone surrogate (models do emit
        "\\ud800" escapes) would fail to bind, so such text goes in as surrogatepass bytes.
        Raises TypeError for anything but str or None."""
        if value is None or (type(value) is str and value.isascii()):
            return value
        if not isinstance(value, str):
            raise TypeError(f"expected str, got {type(value).__name__}")
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
        return value if type(value) is str else encoded.decode("utf-8")  # str subclasses bind as plain text

    @staticmethod
    def untext(value: Any) -> Any:
        """The inverse of `text` for a value read back: bytes become the same str again."""
        return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value

    # -- reading ------------------------------------------------------------------------

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """All rows of a query; sees this connection's uncommitted writes. Raises SQLite's error
        while a batch a full disk rolled back cannot be written again (`cannot_write` says so)."""
        self._restore()
        return self._connection().execute(sql, params).fetchall()

    def read_one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        self._restore()
        return self._connection().execute(sql, params).fetchone()

    # -- writing ------------------------------------------------------------------------

    def write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run a write now, inside the current batch (committed at the next loop turn, or at
        once when no event loop runs and no `transaction` is open)."""
        batched = self._open_batch()
        cursor = self._execute(sql, params, many=False)
        if not batched and not self._tx_depth:
            self.commit()
        return cursor

    def write_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        """`write` for many parameter rows of one statement."""
        batched = self._open_batch()
        cursor = self._execute(sql, list(rows), many=True)
        if not batched and not self._tx_depth:
            self.commit()
        return cursor

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes that stand or fall together, inside the current batch: a savepoint, rolled
        back if the block raises. Nests."""
        batched = self._open_batch()
        conn = self._connection()
        mark = len(self._redo)
        self._execute("SAVEPOINT tx", (), many=False)
        self._tx_depth += 1
        try:
            yield
            self._execute("RELEASE tx", (), many=False)
        except BaseException:
            del self._redo[mark:]  # the block is undone, also when a full disk undid the whole batch
            if conn.in_transaction and not self._lost:
                conn.execute("ROLLBACK TO tx")
                conn.execute("RELEASE tx")
            raise
        finally:
            self._tx_depth -= 1
        if not batched and not self._tx_depth:
            self.commit()

    def request(self, participant: Participant) -> None:
        """Have ``participant`` flush into the next commit (at the next loop turn; at once
        without a running loop)."""
        if self._commit_due and participant in self._due:
            return  # already in the commit coming up (the common case: many puts per loop turn)
        self._connection()
        self._due[participant] = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.commit()
        else:
            self._schedule(loop)

    async def durable(self) -> None:
        """Return once every write made and every flush requested so far is committed: at the
        batch's commit on the next loop turn, shared by every caller of this turn. Raises the
        commit's `sqlite3.Error` if it fails (it is retried with the next write or wait).
        A participant's own flush failure is reported to it, not here."""
        conn = self._connection()
        if not conn.in_transaction and not self._due and not self._lost:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append(waiter)
        self._schedule(loop)  # normally already due; not after a commit that failed
        await waiter

    def commit(self) -> None:
        """Flush the participants and commit the batch now. Everyone waiting hears the outcome;
        on failure the error is raised too. The outbox calls this right before a send, so a
        message is durably journaled before it can reach a platform."""
        conn = self._connection()
        self._commit_due = False
        self._committing = True
        try:
            self._commit(conn)
        finally:
            self._committing = False

    def _commit(self, conn: sqlite3.Connection) -> None:
        due, self._due = list(self._due), {}
        waiters, self._waiters = self._waiters, []
        failures: dict[Participant, BaseException] = {}
        try:
            self._write_again()
            if due and not conn.in_transaction and (locked := self._begin_without_waiting()) is not None:
                if self._still_waiting_for_lock():
                    self._due = dict.fromkeys(due) | self._due
                    self._waiters = waiters + self._waiters
                    self._schedule_retry()
                    return
                # SQLite's own error, not one made here: its code (SQLITE_BUSY) is what tells a lock, which
                # passes, from a bug (`platforms.not_recorded.storage_refusal`); without it the events whose
                # handling waited for this commit were counted failed attempts, and set aside for a lock.
                self._held(locked)
                raise locked
            flushed: list[Participant] = []
            for participant in due:
                error = self._flush(conn, participant)
                if not conn.in_transaction:
                    # SQLite rolled the whole batch back (a full disk), the rows flushed before this
                    # one with it, also when the flush caught the error itself: none of them is durable.
                    error = error or sqlite3.OperationalError(f"{self.path.name}: SQLite rolled the batch back")
                    failures.update(dict.fromkeys(flushed, error))
                    flushed = []
                if error is not None:
                    failures[participant] = error
                else:
                    flushed.append(participant)
            self._write_again()  # a participant's flush met a full disk
            if conn.in_transaction:
                try:
                    self._execute("COMMIT", (), many=False)
                except sqlite3.Error as exc:
                    self._end_refused_commit(conn, exc)
                    raise
                self._redo.clear()
                self.commits += 1
                self._written()
        except BaseException as exc:
            self._locked_since = None
            for participant in due:
                _tell(participant, exc)
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            raise
        self._locked_since = None
        for participant in due:
            _tell(participant, failures.get(participant))
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def dropped(self, error: BaseException) -> bool:
        """Whether ``error``, raised by a commit (`commit`, `durable`), dropped the writes of its batch: SQLite
        refused the COMMIT for a broken constraint, which they would break at every try. Any other error a
        commit raises leaves them kept, to be written again and committed once SQLite takes them (a full disk,
        a lock, a corrupt page alike): whoever took a write for its sender must not then tell it nothing was
        recorded."""
        return error is self._dropped

    def automatic_checkpoints(self, enabled: bool) -> None:
        """Let commits checkpoint the WAL themselves (SQLite's default: tens of milliseconds
        inside the commit that crosses 1,000 pages, on the event loop), or not, while a
        checkpointer does it off the loop."""
        self._connection().execute(f"PRAGMA wal_autocheckpoint={1000 if enabled else 0}")

    def close(self) -> None:
        """Commit what is pending (raising if that fails) and close. Idempotent."""
        if self._conn is None:
            return
        if self._rewrite is not None:
            self._rewrite.cancel()
            self._rewrite = None
        try:
            self.commit()
        finally:
            self._conn.close()
            self._conn = None

    # -- internals ----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.ProgrammingError(f"{self.path}: the database is closed")
        return self._conn

    def _open_batch(self) -> bool:
        """Open the batch if none is open. False when nothing will commit it later: no event
        loop runs, and no commit is under way (a participant's flush joins that one)."""
        conn = self._connection()
        if self._lost:
            self._write_again()
        elif not conn.in_transaction:
            self._begin()
        if self._committing:
            return True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._schedule(loop)  # also after a failed commit left the batch open
        return True

    def _execute(self, sql: str, params: Any, *, many: bool) -> sqlite3.Cursor:
        """Run one statement of the batch and remember it, to write it again if the batch is lost."""
        conn = self._connection()
        try:
            cursor = conn.executemany(sql, params) if many else conn.execute(sql, params)
        except sqlite3.Error as exc:
            self._refused(exc)
            if self._redo and not conn.in_transaction and not self._lost:
                self._lost = True
                log.error("%s: SQLite rolled back the writes not yet committed (%s); they are written again"
                          " with the next write or wait, or once there is room", self.path.name, exc)
                self._retry_lost()
            raise
        self._redo.append((sql, params, many))
        return cursor

    def _end_refused_commit(self, conn: sqlite3.Connection, exc: sqlite3.Error) -> None:
        """Roll back a batch whose COMMIT SQLite refused but left open (a lock it could not get, a
        deferred constraint): left open, it would take every later write into a transaction that may
        never commit, and a participant told its rows failed (a launch the journal refused) would
        see them committed by the next commit after all. The batch's own writes are written again
        first, as a full disk's are, unless it broke a constraint: those could never commit, and
        written again they would fail every batch after them."""
        if not conn.in_transaction:
            return  # SQLite rolled it back itself (a full disk, an I/O error): `_execute` saw to it
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as rollback_error:
            log.error("%s: rolling back the batch whose commit failed failed too: %s", self.path.name, rollback_error)
            return
        if not self._redo or self._lost:
            return
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_CONSTRAINT:
            log.error("%s: the batch broke a constraint at commit (%s); its writes are dropped, not written again",
                      self.path.name, exc)
            self._redo.clear()
            self._dropped = exc
            return
        self._lost = True
        log.error("%s: the commit failed (%s); its writes are written again with the next write or wait",
                  self.path.name, exc)
        self._retry_lost()

    def _write_again(self) -> None:
        """Write the lost batch again, in a new one; raises (and stays lost) if SQLite refuses again."""
        if not self._lost:
            return
        conn = self._connection()
        self._begin()
        try:
            for sql, params, many in self._redo:
                if many:
                    conn.executemany(sql, params)
                else:
                    conn.execute(sql, params)
        except BaseException as exc:
            if isinstance(exc, sqlite3.Error):
                self._refused(exc)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._lost = False
        self._rewrite_delay = self.lost_retry[0]
        log.info("%s: the writes a full disk rolled back are written again", self.path.name)

    def _retry_lost(self) -> None:
        """Try the lost batch again after the current wait, unless a try is due already."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to try on: the next write or wait writes it
        if self._rewrite is None:
            self._rewrite = loop.call_later(self._rewrite_delay, self._try_lost)

    def _try_lost(self) -> None:
        self._rewrite = None
        if self._conn is None or not self._lost:
            return  # written by a use of the database meanwhile
        if self._committing or self._tx_depth:
            self._retry_lost()
            return
        self._rewrite_delay = min(self._rewrite_delay * 2, self.lost_retry[1])  # if this try fails too
        try:
            self.commit()  # writes the lost batch first, then commits it with whatever is due
        except sqlite3.Error as exc:
            if self._lost:
                log.warning("%s: the writes a full disk rolled back still cannot be written (%s); trying again"
                            " in %g s", self.path.name, exc, self._rewrite_delay)
                self._retry_lost()
            else:
                log.error("committing %s failed; retrying with the next write: %s", self.path.name, exc)

    def _refused(self, exc: sqlite3.Error) -> None:
        """SQLite refused a write: when the file cannot be written, say so once, until it can."""
        if not cannot_write(exc):
            return
        self._refused_at, self._written_since = self.clock.monotonic(), False
        if self._write_error is not None:
            return
        self._write_error, self.write_error_since = str(exc), self.clock.time()
        log.error("%s cannot be written: %s; what the gateway must record waits (a message is not"
                  " acknowledged, a reply not sent) and is written once it can be: free space on its disk",
                  self.path, exc)

    def _written(self) -> None:
        if self._write_error is None or self._lost:
            return
        self._written_since = True
        self._check_recovered()

    def _check_recovered(self) -> None:
        if (not self._written_since or self._lost
                or self.clock.monotonic() - self._refused_at < self.recovery_seconds):
            return
        log.info("%s is written again, after %.0f s", self.path, self.clock.time() - (self.write_error_since or 0))
        self._write_error = self.write_error_since = None

    def _restore(self) -> None:
        """Before a read: the lost batch is written again, so no read sees the state without it."""
        if self._lost and not self._open_batch() and not self._tx_depth:
            self.commit()

    def _begin(self) -> None:
        """Begin the batch, waiting up to ``busy_timeout`` for another connection's write lock unless a wait
        for it was in vain already."""
        if self._held_since is not None:
            if (locked := self._begin_without_waiting()) is not None:
                raise locked
            return
        try:
            self._connection().execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            self._held(exc)
            raise

    def _held(self, exc: sqlite3.OperationalError) -> None:
        """A wait for the write lock was in vain: say so once, until a batch opens."""
        if self._held_since is not None or not _busy(exc):
            return
        self._held_since, self._held_at = self.clock.monotonic(), self.clock.time()
        log.error("%s: another process holds its write lock (a transaction left open in an sqlite3 shell or a"
                  " database browser: BEGIN IMMEDIATE, or a change not committed yet); until it ends, what the gateway"
                  " must record waits (a message is not acknowledged, its platform sends it again): commit or roll"
                  " back that transaction, or close the program", self.path)

    def _begin_without_waiting(self) -> sqlite3.OperationalError | None:
        """Begin the batch if no other connection holds the write lock; else SQLite's error saying it does."""
        conn = self._connection()
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("BEGIN IMMEDIATE")
            if self._held_since is not None:
                log.info("%s: the write lock is free again (first found held %.0f s ago)", self.path,
                         self.clock.monotonic() - self._held_since)
                self._held_since = self._held_at = None
            return None
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            return exc
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")

    def _still_waiting_for_lock(self) -> bool:
        now = time.monotonic()
        if self._locked_since is None:
            self._locked_since, self._retry_delay = now, _RETRY_FIRST
        return now - self._locked_since < self.busy_timeout

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._commit_due:
            self._commit_due = True
            loop.call_soon(self._due_commit)

    def _schedule_retry(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to retry on: the next write or wait tries again
        self._commit_due = True
        loop.call_later(self._retry_delay, self._due_commit)
        self._retry_delay = min(self._retry_delay * 2, _RETRY_MAX)

    def _due_commit(self) -> None:
        if self._conn is None or not self._commit_due:
            return
        try:
            self.commit()
        except sqlite3.Error as exc:  # everyone waiting was told; the next write or wait retries
            if self._held_since is None or not _busy(exc):  # else `_held` said why
                log.error("committing %s failed; retrying with the next write: %s", self.path.name, exc)

    def _flush(self, conn: sqlite3.Connection, participant: Participant) -> BaseException | None:
        self._write_again()
        mark = len(self._redo)
        conn.execute("SAVEPOINT flush")
        try:
            participant.flush()
        except Exception as exc:
            if conn.in_transaction and not self._lost:
                conn.execute("ROLLBACK TO flush")
                conn.execute("RELEASE flush")
            return exc
        finally:
            del self._redo[mark:]  # a participant keeps its rows until it hears they are committed
        conn.execute("RELEASE flush")
        return None


def cannot_write(exc: BaseException) -> bool:
    """``exc`` is SQLite's word that the file cannot be written (a full disk, a failing device),
    for a write or for a read that had to write a lost batch again first (see `SqliteDatabase.read`)."""
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _STORAGE


def _busy(exc: sqlite3.Error) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY


def _tell(participant: Participant, error: BaseException | None) -> None:
    try:
        participant.committed(error)
    except Exception:  # one participant's bug must not keep the others uninformed
        log.exception("a database participant failed to take the outcome of a commit")
