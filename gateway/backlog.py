"""Backlogs: what waits, in one chat and in the whole gateway.

In one chat, the backlog guard (`BacklogGuard`): how many background results the chat may have waiting.
Every background delegation whose results have not been delivered yet (``running``
in the ledger) counts, the model's and those the user launched again (``/retry``,
``/agents retry``). When a delegation by the model takes a chat above `BACKLOG_WARN`, or
finds it above where such a relaunch took it, the chat is warned once (again only after the
backlog has fallen back) and the model gets a note; a background delegation by the model
that would take a chat above `BACKLOG_LIMIT` is refused before any child starts (what the
user asks for is not).

In the whole gateway (`GatewayBacklog`), for ``/healthz`` and ``/metrics``: the messages received and not answered
yet, the parts not sent yet, how long the oldest of each has waited, and whether the gateway is still catching up on
what waited for it at its start. A start after an outage replays its unanswered messages and sends what was left
unsent, for minutes while chats wait, and a monitor that read only the connections and the storage saw ``ok``.
Its counts read an index entry per row waiting (some 50 ms at 100,000 messages and 100,000 parts): ``/healthz`` and
``/metrics`` read them on a worker thread (`GatewayBacklog.read`), so that no chat waits for them; the outbox's counts
of every platform, which ``/metrics`` and the console show, are read there too (`GatewayBacklog.outbox_counts`), and
so is each such read of a page polled often (`OffLoopRead`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from agent import Clock, ToolError
from gateway.outbox import Outbox
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession
from gateway.store import DelegationTable, GatewayStore, Inbox, OutboxRows
from lifecycle import BackgroundDispatch, SqliteDatabase

log = logging.getLogger("gateway.backlog")

BACKLOG_WARN = 25
"""Above this many undelivered background delegations, a chat is warned."""
BACKLOG_LIMIT = 50
"""The model's background delegations never take a chat above this many undelivered ones."""
READ_SHARE = 0.02
"""The most of the time `GatewayBacklog`'s reads take, however long the backlog: a read that took t seconds is
reused for t / READ_SHARE. Its counts read an index entry per row waiting, on a worker thread (`GatewayBacklog.read`),
which takes a core's time all the same."""
FRESH_SECONDS = 1.0
"""A read is reused for this long at least: monitors polling ``/healthz`` many times a second cost one read."""
_READER = ThreadPoolExecutor(1, thread_name_prefix="switchboard-backlog")
"""Where `OffLoopRead.read` reads: not the event loop's default executor, whose few threads blocking tools and DNS
lookups may all hold for as long as they take, while ``/healthz`` waited its turn behind them."""
READ_WAIT = 2.0
"""How long a ``/metrics`` scrape (`OffLoopRead.refresh`) and a console snapshot wait for a read: one still under way
then leaves its gauges (its section) out (`SlowRead`), and goes on for the next. Prometheus gives up on a scrape after
10 s by default, and counted the whole gateway down."""
T = TypeVar("T")


class BacklogGuard:
    def __init__(self, table: DelegationTable, registry: SessionRegistry, outbox: Outbox) -> None:
        self._table = table
        self._registry = registry
        self._outbox = outbox
        self._above: weakref.WeakKeyDictionary[GatewaySession, bool] = weakref.WeakKeyDictionary()
        """Whether the model's latest delegation left the chat above `BACKLOG_WARN` (warned then, or by a process
        before this one): a relaunch by the user, which the guard does not see, may take it above in between."""

    def waiting(self, session: GatewaySession) -> int:
        """The chat's background delegations whose results have not been delivered yet."""
        return self._table.count_unsettled(session.key)

    def admit(self, agent_session_id: str) -> str | None:
        """The background tool's ``admit``: refuse (`ToolError`) a delegation that would take the
        chat above `BACKLOG_LIMIT`; above `BACKLOG_WARN`, a note for the model."""
        session = self._registry.by_agent(agent_session_id)
        if session is None:
            return None  # the ledger refuses it when recording, naming why
        waiting = self.waiting(session)
        if waiting >= BACKLOG_LIMIT:
            raise ToolError(
                f"Refused, no subagent was started: this chat already has {waiting} background results waiting to be "
                f"delivered, the most it may hold ({BACKLOG_LIMIT}). Tell the user; new background work is accepted "
                "again as those results are delivered (/agents lists them, /stop drops them)."
            )
        if waiting >= BACKLOG_WARN:
            return (f"This chat has {waiting + 1} background results waiting to be delivered; above {BACKLOG_LIMIT} "
                    "new background work is refused. Let dispatched work finish before dispatching more.")
        return None

    def recorded(self, session: GatewaySession, dispatch: BackgroundDispatch, waiting_before: int) -> None:
        """A delegation was recorded: warn the chat when it just went above `BACKLOG_WARN`, or is found above
        though it was not at the model's delegation before (``/retry`` or ``/agents retry`` took it there)."""
        was_above, self._above[session] = self._above.get(session), waiting_before >= BACKLOG_WARN
        # Unknown (None: not seen since the start) and above already: warned by the process before, most likely.
        if waiting_before < BACKLOG_WARN or (waiting_before > BACKLOG_WARN and was_above is not False):
            return
        text = (f"⚠️ {waiting_before + 1} background results are waiting to be delivered in this chat. New "
                f"background work is refused once {BACKLOG_LIMIT} are waiting; /agents lists them, /stop drops them.")
        try:
            self._outbox.enqueue(*session.chat, text, kind="completion", key=f"{dispatch.delegation_id}:backlog",
                                 turn_id=dispatch.parent_turn_id)
        except sqlite3.Error as exc:
            # The delegation is recorded and its children run: failing the call now would tell the model
            # they did not start (and it would dispatch them again). The model's note still says it.
            log.warning("the backlog warning of delegation %s could not be journaled (%s); the chat is not warned",
                        dispatch.delegation_id, exc)


@dataclass(frozen=True, slots=True)
class Backlog:
    """What the gateway has still to work off, of the platforms it serves (`GatewayBacklog.now`)."""

    catching_up: bool
    """Whether messages received before this start still wait to be answered, or parts journaled before it to be
    sent: the start is still working off what waited for it (replayed from the inbox, left in the outbox)."""
    inbox_waiting: int
    """Messages received and not answered yet: their turns running, or waiting for their turns."""
    inbox_oldest_seconds: float | None
    """How long the first received of them has waited since; None when none waits."""
    outbox_pending: int
    """Message parts (and edits of messages) not sent yet."""
    outbox_oldest_seconds: float | None
    """How long the first journaled of them has waited since; None when none waits."""

    def to_json(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "reason": None}


def unread_json(error: BaseException) -> dict[str, object]:
    """A `Backlog`'s fields as ``/healthz`` shows them when the store could not be read: unknown, and why."""
    return {**{field.name: None for field in dataclasses.fields(Backlog)},
            "reason": f"the state database could not be read: {type(error).__name__}: {error}"}


class SlowRead(TimeoutError):
    """A read of the state database is still under way (`OffLoopRead`): what it reads is left out until it ends."""


class Tables(Protocol):
    """What an `OffLoopRead` reads: the store's, or the same tables on a connection of the worker thread's own."""

    @property
    def inbox(self) -> Inbox: ...

    @property
    def outbox(self) -> OutboxRows: ...


@dataclass(frozen=True, slots=True)
class _OwnTables:
    inbox: Inbox
    outbox: OutboxRows


class OffLoopRead(Generic[T]):
    """A read of the state database for a page polled often (``/healthz``, ``/metrics``, the console): made on a thread
    and a connection of its own (`read`), so that the event loop, every chat with it, goes on meanwhile; or on the
    caller's thread (`now`). Callers at the same time share one read. A read is reused for a moment (`FRESH_SECONDS`,
    and longer the longer it took: `READ_SHARE`); with a ``version``, `read` reuses it only while ``version()`` gives
    what it gave as the read began (what may change at each commit shows at the next read), and `now` either way.

    ``read(tables, now)`` reads ``tables`` at the epoch time ``now``; on the worker thread, in one snapshot of what is
    committed (the store commits at the loop's next turn)."""

    def __init__(self, store: GatewayStore, clock: Clock, read: Callable[[Tables, float], T],
                 version: Callable[[], object] | None = None) -> None:
        self._store, self._clock, self._read, self._version = store, clock, read, version
        self._last: tuple[float, float, object, T] | None = None
        """The latest read: when it began (monotonic), for how long it is reused, the version then, what it read."""
        self._reading: asyncio.Future[T] | None = None
        """The read on the worker thread under way, which callers meanwhile share."""
        self._reading_since = 0.0

    def now(self) -> T:
        """The latest read if it is reused still, else read on the caller's thread: the event loop waits for it.
        A caller that cannot await (``/metrics``' gauges) takes the read its `refresh` just made, though the store
        committed since (it does at each loop turn while it works). Raises `SlowRead` while a read on the worker
        thread is under way (it waits for the same storage: that read is not made again where every chat waits for
        it), else what the store raises."""
        version = self._version() if self._version is not None else None
        if (last := self._fresh(version, for_a_moment=True)) is not None:
            return last
        if self._reading is not None:
            raise self._slow()
        began = self._clock.monotonic()
        return self._keep(began, version, self._read(self._store, self._clock.time()))

    async def read(self, within: float | None = None) -> T:
        """`now`, read on the worker thread: the event loop goes on meanwhile. Raises what the store raises, to each
        caller of that read; `SlowRead` once it has waited ``within`` seconds (the read goes on, for later callers)."""
        version = self._version() if self._version is not None else None
        if (last := self._fresh(version, for_a_moment=self._version is None)) is not None:
            return last
        if self._reading is None:
            self._reading_since = self._clock.monotonic()
            self._reading = asyncio.ensure_future(self._read_apart(version))
            self._reading.add_done_callback(self._read_ended)
        try:
            # Shielded: a caller that goes (a monitor's timeout, `within`) does not cancel the read others wait for.
            return await asyncio.wait_for(asyncio.shield(self._reading), within)
        except TimeoutError:
            raise self._slow() from None

    async def refresh(self) -> None:
        """`read`, waiting `READ_WAIT` at most, for a caller of `now` soon after (``/metrics``' gauges, collected
        without awaiting): `now` then reads nothing, or raises `SlowRead` while this read goes on. Never raises: a
        read that fails is left for `now` to make again, and raise."""
        try:
            await self.read(READ_WAIT)
        except Exception:
            pass

    def _fresh(self, version: object, *, for_a_moment: bool) -> T | None:
        if (last := self._last) is None:
            return None
        began, reused_for, seen, value = last
        if self._version is not None and seen == version:
            return value
        return value if for_a_moment and self._clock.monotonic() - began < reused_for else None

    def _keep(self, began: float, version: object, value: T) -> T:
        if self._last is None or self._last[0] <= began:  # not over a later read that ended first
            self._last = (began, max(FRESH_SECONDS, (self._clock.monotonic() - began) / READ_SHARE), version, value)
        return value

    def _slow(self) -> SlowRead:
        so_far = self._clock.monotonic() - self._reading_since
        return SlowRead(f"the state database is still being read (for {so_far:.1f} s so far); it is shown once that"
                        " read ends")

    async def _read_apart(self, version: object) -> T:
        began, now = self._clock.monotonic(), self._clock.time()
        read = asyncio.get_running_loop().run_in_executor(_READER, self._read_on_own_connection, now)
        return self._keep(began, version, await read)

    def _read_ended(self, reading: asyncio.Future[T]) -> None:
        self._reading = None
        if not reading.cancelled():
            reading.exception()  # seen: raised to its callers, or, all of them gone, logged by nobody

    def _read_on_own_connection(self, now: float) -> T:
        db = self._store.db
        # mode=rw: a file gone (moved away while the gateway runs) is an error, not a new empty database.
        conn = sqlite3.connect(f"{db.path.resolve().as_uri()}?mode=rw", timeout=db.busy_timeout, isolation_level=None,
                               uri=True)
        try:
            conn.execute("PRAGMA query_only=1")
            conn.execute("BEGIN")  # one snapshot: what it reads agrees
            reader: Any = _Reader(conn)  # all they use of a database here: the store's SQL, read
            return self._read(_OwnTables(Inbox(reader, self._clock), OutboxRows(reader, self._clock)), now)
        finally:
            conn.close()


class GatewayBacklog:
    """What the gateway has still to work off, of the platforms it serves: what waits for a platform no longer
    configured is kept for a start that configures it (`gateway.unconfigured`), and never worked off by this one.
    Made before the gateway starts (`gateway.metrics.GatewayMetrics` makes it): what the store holds then is what
    the start finds waiting.

    `outbox_counts`: the outbox's parts pending and failed, of every platform (`OutboxRows.counts`), as ``/metrics``
    and the console show them: read on the worker thread too (some 20-40 ms at 100,000 parts pending), and reused
    until the database changes (a commit of the store's, or of another connection's), so that a page shows a part
    retried or dismissed at its next refresh."""

    def __init__(self, store: GatewayStore, platforms: Iterable[str], clock: Clock) -> None:
        self._clock = clock
        self._platforms = tuple(sorted(set(platforms)))
        self._started = clock.time()
        self._journaled_before = store.outbox.last_id()
        """The outbox's last id before the start: ids only grow, so a part at or below it was there at the start."""
        self._reads = OffLoopRead(store, clock, self._read)
        self.outbox_counts = OffLoopRead(store, clock, lambda tables, now: tables.outbox.counts(),
                                         version=lambda: _database_version(store.db))

    def now(self) -> Backlog:
        """The backlog now, or as read less than a moment ago (`FRESH_SECONDS`, `READ_SHARE`), read on the caller's
        thread: the event loop waits for it, every chat with it (some 50 ms at 100,000 messages and 100,000 parts
        waiting); `read` does not. Raises what the store raises, or `SlowRead` (`OffLoopRead.now`)."""
        return self._reads.now()

    async def read(self) -> Backlog:
        """`now`, read on a thread and a connection of its own: the event loop goes on meanwhile, and callers
        at the same time share one read. It reads what is committed (the store commits at the loop's next turn).
        Raises what the store raises, to each caller of that read, or `SlowRead` after `READ_WAIT`: ``/healthz``
        answers without it then, not once a hung disk's read ends (a health check's timeout, a restart)."""
        return await self._reads.read(READ_WAIT)

    async def refresh(self) -> None:
        """`read`, and `outbox_counts`', for a caller of `now` soon after (``/metrics``' gauges, collected without
        awaiting), each waiting `READ_WAIT` at most (`OffLoopRead.refresh`). Never raises."""
        await asyncio.gather(self._reads.refresh(), self.outbox_counts.refresh())

    def _read(self, tables: Tables, now: float) -> Backlog:
        inbox, outbox, platforms = tables.inbox, tables.outbox, self._platforms
        waiting = sum(n for platform, n in inbox.waiting_by_platform().items() if platform in platforms)
        pending = sum(n for platform, n in outbox.pending_by_platform().items() if platform in platforms)
        received = inbox.first_waiting(platforms)
        part = outbox.first_pending(platforms)
        return Backlog(
            catching_up=(received is not None and received < self._started)
            or (part is not None and part[0] <= self._journaled_before),
            inbox_waiting=waiting, inbox_oldest_seconds=None if received is None else _age(now, received),
            outbox_pending=pending, outbox_oldest_seconds=None if part is None else _age(now, part[1]))


class _Reader:
    """The reading half of `lifecycle.SqliteDatabase`, on a connection of the worker thread's own."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._conn.execute(sql, params).fetchall()

    def read_one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self._conn.execute(sql, params).fetchone()


def _database_version(db: SqliteDatabase) -> tuple[int, int]:
    """What changes with each commit to the database: the store's own (``commits``), another connection's (SQLite's
    ``data_version``, which a connection's own commits leave alone). Read on the store's connection, at once (no
    table read), so it raises while the store refuses reads, as the store's other reads do."""
    return db.commits, db.read_one("PRAGMA data_version")[0]


def _age(now: float, since: float) -> float:
    return round(max(0.0, now - since), 1)
