"""The ledger's rows: every background delegation, from the moment it is dispatched until its
results are delivered, or it is settled another way.

A row keeps what ran apart from what was delivered: its tasks (each with the subagent
that runs it now and how many attempts it has had; the children's states are the
lifecycle journal's) and a status that says whether the chat has been answered:
``running`` (not yet), ``delivered`` (the completion turn's reply is journaled in the
outbox; reason ``DELIVERY_FAILED``: that turn failed ``inbox.max_attempts`` times, and the results
themselves were journaled instead), ``suppressed`` (``reason``: ``NO_REPLY``, ``/stop`` or ``/new``) or ``reported``
(the chat was told its children were interrupted by a restart). While a row runs, its completion
turn's failed attempts are counted (`DelegationTable.delivery_failed`) and the turn is marked begun
while it runs (not while it waits for the answer to a question: `mark_delivery`, nor after a clean stop
cut it short, or a start charged it a death, until it begins again: `carry_over_deliveries`, `delivery_failed`),
so that a process that dies in it charges it an attempt at the next start. Its place in its chat's queue is
kept too (`queue_delivery`), for the next start to run it again there. A settled row
also says whether its progress card still owes its final edit (``card_owed``, set by the settle itself and cleared
in the commit that journals that edit), so a restart finishes a card the process before it could
not (`gateway.delegation_cards`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from agent import Clock
from gateway.store.unreadable_rows import UNREADABLE, LeftOut, as_bytes, row_name, text
from lifecycle import SqliteDatabase

Status = Literal["running", "delivered", "suppressed", "reported"]
SETTLED = ("delivered", "suppressed", "reported")
DELIVERY_FAILED = "delivery failed"
"""The reason of a delegation whose completion turn failed too often: its results were sent as they were."""
RETENTION_SECONDS = 7 * 24 * 3600.0
"""Settled rows are kept a week, for /agents, /retry and webhook turn reads (longer while their cards owe their
final edits: `DelegationTable.prune`)."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_delegations (
        delegation_id TEXT PRIMARY KEY, session_key TEXT NOT NULL, agent_session_id TEXT NOT NULL,
        origin_turn_id TEXT NOT NULL, dispatched_at REAL NOT NULL, tasks TEXT NOT NULL, status TEXT NOT NULL,
        reason TEXT, settled_at REAL, card_owed INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS gateway_delegations_session ON gateway_delegations (session_key, dispatched_at)",
    "CREATE INDEX IF NOT EXISTS gateway_delegations_origin ON gateway_delegations (origin_turn_id)",
    # `latest`: /agents at a chat's top level reads it for each of its thread sessions in memory.
    """CREATE INDEX IF NOT EXISTS gateway_delegations_generation
        ON gateway_delegations (agent_session_id, dispatched_at)""",
    """CREATE INDEX IF NOT EXISTS gateway_delegations_open ON gateway_delegations (dispatched_at)
        WHERE status = 'running'""",
    # `recent`'s latest settled ones, which the console reads up to ten times a second.
    """CREATE INDEX IF NOT EXISTS gateway_delegations_settled ON gateway_delegations (settled_at)
        WHERE status != 'running'""",
    # Apart from the rows, so no schema version is spent on it: a build before it ignores the table.
    """CREATE TABLE IF NOT EXISTS gateway_delivery_attempts (
        delegation_id TEXT PRIMARY KEY, attempts INTEGER NOT NULL DEFAULT 0, begun INTEGER NOT NULL DEFAULT 0,
        last_error TEXT)""",
    # Likewise: a build before it queues a delegation's completion turn after its chat's replayed messages.
    """CREATE TABLE IF NOT EXISTS gateway_delivery_places (
        delegation_id TEXT PRIMARY KEY, after_arrival INTEGER NOT NULL)""",
)
OWED_CARD_TURN = ("(substr(turn_id, 1, 3) = 'tc-' AND EXISTS (SELECT 1 FROM gateway_delegations"
                  " WHERE delegation_id = substr(turn_id, 4) AND card_owed = 1))")
"""An outbox row's condition: its turn is the completion turn (`DelegationRow.completion_turn_id`) of a
delegation whose card still owes its final edit; the outbox keeps that card's message, which the edit is of
(`OutboxRows.prune`). A lookup by primary key for each row weighed, not a scan of the delegations."""
_COLUMNS = ("delegation_id, session_key, agent_session_id, origin_turn_id, dispatched_at, tasks, status, reason,"
            " settled_at")
_SELECT = (f"{as_bytes('delegation_id', 'session_key', 'agent_session_id', 'origin_turn_id')}, dispatched_at,"
           f" {as_bytes('tasks', 'status', 'reason')}, settled_at, rowid")
"""`_COLUMNS` as read, then the rowid: texts as bytes (`gateway.store.unreadable_rows`)."""

COMPLETION_TURN_PREFIX = "tc-"
"""How a completion turn's id begins (`DelegationRow.completion_turn_id`): its delegation's id follows."""


@dataclass(frozen=True, slots=True)
class LedgerTask:
    task_index: int
    subagent_id: str
    """The child running the task now (its latest attempt)."""
    spec: dict[str, Any]
    """The task as the model gave it: goal, context, role, allowed_toolsets, metadata, output_schema, images."""
    attempts: int = 1

    @property
    def goal(self) -> str:
        return str(self.spec.get("goal", ""))


@dataclass(frozen=True, slots=True)
class DelegationRow:
    delegation_id: str
    session_key: str
    agent_session_id: str
    """The session generation that delegated: results never reach another one."""
    origin_turn_id: str
    """The turn whose model call dispatched it."""
    dispatched_at: float
    tasks: tuple[LedgerTask, ...]
    status: Status
    reason: str | None = None
    settled_at: float | None = None

    @property
    def completion_turn_id(self) -> str:
        """The id of the turn that delivers its results: stable, so a replay after a crash
        journals nothing twice."""
        return f"{COMPLETION_TURN_PREFIX}{self.delegation_id}"


class DelegationTable:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._left_out = LeftOut("gateway_delegations")

    def _rows(self, rows: list[tuple]) -> list[DelegationRow]:
        """The ``rows`` (`_SELECT`) that read back; one that does not (a text of no UTF-8, tasks that are no JSON
        list of tasks) is left out (`LeftOut`): raised, it stopped every start and the console, for every chat."""
        readable, left_out = [], {}
        for r in rows:
            try:
                readable.append(_row(r))
            except UNREADABLE as exc:
                left_out[row_name("delegation_id", r[0], r[9])] = type(exc).__name__
        if left_out:
            self._left_out.report(left_out)
        return readable

    def add(self, row: DelegationRow) -> None:
        self._db.write(f"INSERT OR IGNORE INTO gateway_delegations ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                       (row.delegation_id, row.session_key, row.agent_session_id, row.origin_turn_id,
                        row.dispatched_at, _tasks_json(row.tasks), row.status, row.reason, row.settled_at))

    def discard(self, delegation_id: str) -> bool:
        """Forget a delegation not settled whose children were never recorded (the commit of their launch,
        which carried its row, failed); whether there was one. Nothing of it ran, and no card or turn of it began."""
        with self._db.transaction():
            self._forget_delivery(delegation_id)
            return self._db.write("DELETE FROM gateway_delegations WHERE delegation_id=? AND status='running'",
                                  (delegation_id,)).rowcount == 1

    def get(self, delegation_id: str) -> DelegationRow | None:
        row = self._db.read_one(f"SELECT {_SELECT} FROM gateway_delegations WHERE delegation_id=?", (delegation_id,))
        return None if row is None else _row(row)

    def replace_tasks(self, delegation_id: str, tasks: tuple[LedgerTask, ...]) -> None:
        """Point tasks at new children (relaunched after a restart)."""
        self._db.write("UPDATE gateway_delegations SET tasks=? WHERE delegation_id=?",
                       (_tasks_json(tasks), delegation_id))

    def add_card_owed(self) -> None:
        """Schema < 9: a settled row says whether its card still owes its final edit. Rows settled before
        owe none (the column's default: no row is rewritten): that build finished their cards, or left them."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_delegations)")}
        if "card_owed" not in columns:
            self._db.write("ALTER TABLE gateway_delegations ADD COLUMN card_owed INTEGER NOT NULL DEFAULT 0")

    def settle(self, delegation_id: str, status: Status, reason: str | None = None) -> bool:
        """Settle a running delegation; False if it was settled already (the first outcome stands).
        Its card is owed its final edit from this very write (a chat without cards is owed a no-op),
        until `finishing_card` records it journaled."""
        cur = self._db.write("UPDATE gateway_delegations SET status=?, reason=?, settled_at=?, card_owed=1"
                             " WHERE delegation_id=? AND status='running'",
                             (status, reason, self._clock.time(), delegation_id))
        if cur.rowcount != 1:
            return False
        self._forget_delivery(delegation_id)
        return True

    def _forget_delivery(self, delegation_id: str) -> None:
        self._db.write("DELETE FROM gateway_delivery_attempts WHERE delegation_id=?", (delegation_id,))
        self._db.write("DELETE FROM gateway_delivery_places WHERE delegation_id=?", (delegation_id,))

    def queue_delivery(self, delegation_id: str) -> None:
        """The delegation's completion turn is queued in its chat now: behind the events the inbox holds, ahead of
        those it receives from now on (`delivery_places`). A turn queued again (tried again after a failure, taken
        up by a start at the end of its chat's queue) takes its new place."""
        # In the one statement: no event is recorded between the look and the write.
        self._db.write("INSERT INTO gateway_delivery_places (delegation_id, after_arrival)"
                       " VALUES (?, (SELECT COALESCE(MAX(rowid), 0) FROM gateway_inbox))"
                       " ON CONFLICT(delegation_id) DO UPDATE SET after_arrival=excluded.after_arrival",
                       (delegation_id,))

    def delivery_places(self) -> dict[str, int]:
        """Delegations not settled whose completion turn was queued: delegation id -> the `Inbox.arrival` of the
        latest event the inbox had recorded then. An event whose arrival is higher came after the turn was queued."""
        return {r[0]: r[1] for r in self._db.read(
            "SELECT p.delegation_id, p.after_arrival FROM gateway_delivery_places p JOIN gateway_delegations d"
            " ON d.delegation_id = p.delegation_id WHERE d.status='running'")}

    def begin_delivery(self, delegation_id: str) -> None:
        """The delegation's completion turn begins: a death from now on is charged to it (`deliveries_begun`)."""
        self._db.write("INSERT INTO gateway_delivery_attempts (delegation_id, begun) VALUES (?, 1)"
                       " ON CONFLICT(delegation_id) DO UPDATE SET begun=1", (delegation_id,))

    def mark_delivery(self, delegation_id: str, begun: bool) -> None:
        """The delegation's completion turn waits for the chat's answer to its question (not ``begun``: idle,
        a death then is charged to none of it) or goes on after it (``begun`` again). Marks only a turn whose
        begin was recorded (`begin_delivery`) and whose row is not settled since (a settle forgets it)."""
        self._db.write("UPDATE gateway_delivery_attempts SET begun=? WHERE delegation_id=?",
                       (int(begun), delegation_id))

    def delivery_waits(self, delegation_id: str) -> None:
        """The delegation's completion turn waits for the chat's answer to its question: idle, a death then is
        charged to none of it (`deliveries_begun`), but it still runs (`deliveries_running`)."""
        self._db.write("UPDATE gateway_delivery_attempts SET begun=2 WHERE delegation_id=?", (delegation_id,))

    def carry_over_deliveries(self) -> None:
        """At a start after a clean stop: the completion turns it cut short still run (`deliveries_running`: they
        run again first in their chats), but a death is charged to none of them (`deliveries_begun`) until each
        begins again (`begin_delivery`). Killed before that, the process did not die of it."""
        self._db.write("UPDATE gateway_delivery_attempts SET begun=2 WHERE begun=1")

    def deliveries_running(self) -> set[str]:
        """Delegations not settled whose completion turn had begun and not ended: running, waiting for an answer, or
        cut short by a clean stop and not begun again since."""
        return {r[0] for r in self._db.read(
            "SELECT a.delegation_id FROM gateway_delivery_attempts a JOIN gateway_delegations d"
            " ON d.delegation_id = a.delegation_id WHERE a.begun IN (1, 2) AND d.status='running'")}

    def delivery_failed(self, delegation_id: str, error: str, *, keeps_place: bool = False) -> int:
        """Count a failed attempt of the delegation's completion turn, no longer begun; returns the count.
        ``keeps_place``: a start charges it the death of the process before (`Ledger.cut_short`): it still runs, and
        runs again first in its chat (`deliveries_running`), charged no death until it begins again, as after a
        clean stop (`carry_over_deliveries`). Else it failed in the gateway: tried again later, behind what its
        chat queued meanwhile, it has no place in the queue until then (`queue_delivery`)."""
        begun = 2 if keeps_place else 0
        self._db.write("INSERT INTO gateway_delivery_attempts (delegation_id, attempts, begun, last_error)"
                       " VALUES (?, 1, ?, ?) ON CONFLICT(delegation_id) DO UPDATE SET attempts=attempts+1,"
                       " begun=excluded.begun, last_error=excluded.last_error", (delegation_id, begun, error))
        if not keeps_place:
            self._db.write("DELETE FROM gateway_delivery_places WHERE delegation_id=?", (delegation_id,))
        row = self._db.read_one("SELECT attempts FROM gateway_delivery_attempts WHERE delegation_id=?",
                                (delegation_id,))
        return int(row[0]) if row else 0

    def deliveries_begun(self) -> set[str]:
        """Delegations not settled whose completion turn had begun and not ended (a process that died in it)."""
        return {r[0] for r in self._db.read(
            "SELECT a.delegation_id FROM gateway_delivery_attempts a JOIN gateway_delegations d"
            " ON d.delegation_id = a.delegation_id WHERE a.begun=1 AND d.status='running'")}

    @contextlib.contextmanager
    def finishing_card(self, delegation_id: str) -> Iterator[None]:
        """Journal the final edit of the delegation's card inside this block: it is no longer owed once
        the block's writes commit, and still is when the block raises (they stand or fall together)."""
        with self._db.transaction():
            self._db.write("UPDATE gateway_delegations SET card_owed=0 WHERE delegation_id=? AND card_owed=1",
                           (delegation_id,))
            yield

    def cards_owed(self) -> list[DelegationRow]:
        """Settled delegations whose cards still owe their final edits, oldest first."""
        return self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE card_owed=1 AND status!='running'"
            " ORDER BY dispatched_at"))

    def count_unsettled(self, session_key: str) -> int:
        """The chat's delegations whose results have not been delivered (or settled otherwise) yet."""
        row = self._db.read_one("SELECT COUNT(*) FROM gateway_delegations WHERE session_key=? AND status='running'",
                                (session_key,))
        return int(row[0]) if row else 0

    def running(self) -> list[DelegationRow]:
        """Every delegation not settled yet, oldest first."""
        return self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE status='running' ORDER BY dispatched_at"))

    def oldest_running_dispatch(self) -> float | None:
        """When the oldest delegation not settled yet was dispatched; None when every one is settled."""
        row = self._db.read_one("SELECT MIN(dispatched_at) FROM gateway_delegations WHERE status='running'")
        return None if row is None else row[0]

    def running_of(self, agent_session_id: str) -> list[DelegationRow]:
        """A session generation's delegations not settled yet, however many it has had since."""
        return self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE agent_session_id=? AND status='running'"
            " ORDER BY dispatched_at", (agent_session_id,)))

    def latest(self, agent_session_id: str, limit: int) -> list[DelegationRow]:
        """A session generation's latest delegations, newest first."""
        return self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE agent_session_id=? ORDER BY dispatched_at DESC LIMIT ?",
            (agent_session_id, limit)))

    def recent(self, limit: int) -> list[DelegationRow]:
        """Every delegation still running, then the latest settled ones, up to ``limit`` in all,
        newest first within each."""
        running = self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE status='running' ORDER BY dispatched_at DESC LIMIT ?",
            (limit,)))
        settled = self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE status!='running' ORDER BY settled_at DESC LIMIT ?",
            (max(0, limit - len(running)),)))
        return running + settled

    def of_turn(self, origin_turn_id: str) -> list[DelegationRow]:
        """The delegations a turn dispatched, oldest first."""
        return self._rows(self._db.read(
            f"SELECT {_SELECT} FROM gateway_delegations WHERE origin_turn_id=? ORDER BY dispatched_at",
            (origin_turn_id,)))

    def prune(self, older_than: float, limit: int | None = None) -> int:
        """Forget settled delegations settled before the epoch time ``older_than``, with their completion
        turns' attempts and places: at most ``limit``, oldest first (all by default). Returns the count.

        One whose card still owes its final edit is kept however old (a platform no longer configured, a
        store that refused the edit until the process stopped): forgotten, the next start would find no card
        owed (`DelegationCards.finish_owed`), and the card would read as running for good."""
        # The statements pick the same rows: the first two change no delegation, and the order is total. The
        # attempts and places go with their rows (a settle forgets them; one written after it is forgotten here),
        # never the whole table at each batch: the write holds the database's lock, every other writer waiting.
        forgotten = ("FROM gateway_delegations WHERE status != 'running' AND settled_at < ? AND card_owed = 0"
                     " ORDER BY settled_at, rowid LIMIT ?")
        args = (older_than, -1 if limit is None else limit)
        with self._db.transaction():
            for table in ("gateway_delivery_attempts", "gateway_delivery_places"):
                self._db.write(f"DELETE FROM {table} WHERE delegation_id IN (SELECT delegation_id {forgotten})", args)
            return self._db.write(f"DELETE FROM gateway_delegations WHERE rowid IN (SELECT rowid {forgotten})",
                                  args).rowcount


def _tasks_json(tasks: tuple[LedgerTask, ...]) -> str:
    return json.dumps([{"task_index": t.task_index, "subagent_id": t.subagent_id, "spec": t.spec,
                        "attempts": t.attempts} for t in tasks])


def _row(r: tuple) -> DelegationRow:
    """The row `_SELECT` read; one of `UNREADABLE` (never quoting it) when it does not read back."""
    r = tuple(text(value) for value in r)
    tasks = tuple(LedgerTask(t["task_index"], t["subagent_id"], t["spec"], t.get("attempts", 1))
                  for t in json.loads(r[5]))
    return DelegationRow(r[0], r[1], r[2], r[3], r[4], tasks, r[6], r[7], r[8])
