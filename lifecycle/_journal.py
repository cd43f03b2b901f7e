"""The durable lifecycle journal: child records, final results and handle keys.

Every backend passes the conformance suite in ``tests/lifecycle/test_journal.py``:

- `Journal.put` is a non-blocking upsert keyed by ``subagent_id``; the last write
  wins. The journal stores, it does not judge: the engine keeps terminal states final.
- Reads (`get`, `find_correlation`) see every put at once, flushed or not.
- `sync` returns once everything put before the call is committed. It raises
  `JournalError` when a write failed (the records are kept and retried, never
  dropped) or when a record was refused, with ``code="JOURNAL_CONFLICT"`` (its
  correlation id is held by another child of the same parent) or
  ``"JOURNAL_REJECTED"`` (it cannot be serialised). Refused records are dropped
  and logged: retrying them could never succeed.
- `sync_launch` is `sync` for the records of a launch: when the commit that should carry
  them fails, they are dropped before it raises (``JOURNAL_WRITE_FAILED``), as are those of
  every launch waiting on that commit, so a launch refused leaves no record for a later
  commit to write. The other records are kept and retried, as `sync` says. From the moment
  the journal drops a launch's records (refused whole, or dropped by a failed commit) until
  its `sync_launch` has raised, `launch_dropped` says so of each: the service still holds
  those children then, and a stop reaching one must not put its row again.
- A refusal is told to the callers it concerns, once. A `sync_launch` raises it only when one
  of its own records was refused, and then the launch is refused whole: its other records are
  dropped too (none is left for a restart to call INTERRUPTED) and ``subagent_ids`` names all
  of them. The other launches of that commit succeed. A plain `sync` covers every record put,
  so it raises the refusals of records no launch owns (a finished child's result), never one a
  launch was told of, nor one of a launch whose caller stopped waiting: that launch hears it
  when it asks again (see `Journal.sync_launch`). A refusal nobody was waiting to hear is kept
  for the next `sync` (or the next `sync_launch` of its records).
- Synced records survive a process crash. `SqliteJournal` runs WAL with
  ``synchronous=NORMAL``: a power cut may lose the last commits.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agent._frozen import fast_init

from ._contract import TERMINAL_STATES, SubagentLifecycleError, SubagentState

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 5
_TERMINAL = frozenset(s.value for s in TERMINAL_STATES)
KeyRowTuple = tuple[str, bytes, float, float | None]


class JournalError(SubagentLifecycleError):
    """The journal could not store or read records; the cause, if any, is in ``__cause__``.

    ``subagent_ids`` names the refused records for ``JOURNAL_CONFLICT`` / ``JOURNAL_REJECTED``.
    """

    def __init__(self, message: str, *, code: str = "JOURNAL_UNAVAILABLE", subagent_ids: tuple[str, ...] = ()):
        super().__init__(message, code=code)
        self.subagent_ids = subagent_ids


@fast_init
@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One child as stored. ``handle`` and ``result`` are JSON text, encoded once by the service:
    the journal stores documents, it does not re-encode them on every write."""

    subagent_id: str
    parent_session_id: str | None
    correlation_id: str | None
    handle: str
    """``SubagentHandle.to_dict()`` as JSON."""
    state: str
    """A `SubagentState` value."""
    created_at: float
    updated_at: float
    started_at: float | None = None
    completed_at: float | None = None
    result: str | None = None
    """``SubagentResult.to_dict()`` as JSON, once terminal."""
    goal: str = ""
    """Kept for listings."""
    stop_reason: str | None = None
    """Why a stop was asked of the live child (its cancel reason while ``CANCEL_REQUESTED``): an
    engine whose children outlive the process is asked again after a restart, in case the
    request never reached it."""
    steers: str | None = None
    """Steers asked of the live child that its engine had not sent when the process stopped (its
    service did not answer), as JSON: ``[{"id": ..., "text": ...}, ...]``, oldest first. An engine
    whose children outlive the process sends them after the next start, before any new one."""
    job: str | None = None
    """The child's `ChildJob` (``to_dict()`` as JSON), kept from its launch until its engine, one whose
    children outlive the process, reports that it holds the job where the child runs
    (`EngineHost.placed`): a process that stopped or was killed before then left a child the engine
    may never have got, and the next start hands it the job again (`Engine.start`), unless
    ``stop_reason`` says it was asked to stop. Never kept for a child whose caller waits for it in the
    process (an inline delegate_task's): that caller dies with the process, and no start runs the child
    for no one."""
    inline: bool = False
    """Its caller waits for it in the process (an inline delegate_task's child): a restart, whose process
    no longer has that caller, stops such a child if its engine still runs it (the gateway runs the
    interrupted turn again, delegating anew) instead of following it on for no one. False in the rows of
    a journal from before it was kept."""

    @property
    def terminal(self) -> bool:
        return self.state in _TERMINAL


MakeResult = Callable[[JournalRecord], str | None]
"""The JSON text of the INTERRUPTED result for an unfinished record; None for one whose handle cannot be read
(it is made terminal all the same, without a result, so that no start finds it again)."""


@runtime_checkable
class Journal(Protocol):
    """What the lifecycle service needs from durable storage. Use from one event loop."""

    async def open(self) -> None:
        """Connect and create or check the schema. Idempotent."""

    async def close(self) -> None:
        """Flush (like `sync`, raising the same way) and release resources, even if the flush fails."""

    def put(self, record: JournalRecord) -> None:
        """Upsert without waiting; durable after the next `sync`."""

    async def sync(self) -> None:
        """Return once every earlier put is committed; see the module docstring for errors."""

    async def sync_launch(self, subagent_ids: Collection[str]) -> None:
        """`sync`, for a launch whose records are ``subagent_ids``: if the commit fails, raises
        `JournalError` (``JOURNAL_WRITE_FAILED``) with those records dropped, never written.
        Raises a refusal only of its own records, the launch then refused whole; another record's
        refusal is not its failure (see the module docstring).
        A call cancelled while it waits keeps them: its caller finishes those children, and asks
        again to learn how their commit ended (at once, without failing, if it wrote them)."""

    def launch_dropped(self, subagent_id: str) -> bool:
        """Whether ``subagent_id``'s launch was refused, its records dropped, and its `sync_launch` has not raised
        yet (see the module docstring). A put of its record meanwhile would be written by the next commit, a
        child that never existed: listed as unfinished, its correlation id held, INTERRUPTED at the next start."""

    async def get(self, subagent_id: str) -> JournalRecord | None:
        """The latest record put for ``subagent_id``, committed or not."""

    async def find_correlation(self, parent_session_id: str | None, correlation_id: str) -> str | None:
        """The child holding this correlation id under this parent, until it is swept."""

    async def unfinished(self) -> list[JournalRecord]:
        """Every non-terminal record (children a previous process left), committed or not."""

    async def interrupt_unfinished(
        self, now: float, make_result: MakeResult, *, keep: Collection[str] = ()
    ) -> list[str]:
        """At start-up: mark every non-terminal record INTERRUPTED (CANCELLED if its state is
        CANCEL_REQUESTED: `ended_state`) at ``now`` with ``make_result(old)``, except those named in
        ``keep`` (an engine still runs them); synced. Returns the ids it marked."""

    async def sweep(self, completed_before: float) -> int:
        """Delete terminal records completed before the time, freeing their correlation ids; returns the count."""

    async def holds_records(self) -> bool:
        """Whether it holds any child's record, finished or not, committed or not: a start finding no handle key
        beside them refuses to make a fresh one, which would leave every one of their handles unknown."""

    async def load_keys(self) -> list[KeyRowTuple]:
        """Every handle key as ``(kid, secret, created_at, retired_at)``, oldest first."""

    async def save_key(self, kid: str, secret: bytes, created_at: float, retired_at: float | None) -> None:
        """Upsert one key, durably, before returning."""

    async def save_keys(self, rows: Collection[KeyRowTuple]) -> None:
        """Upsert these keys in one transaction, durably, before returning: all of them or none. A key ring's
        change spans rows (retiring the signing key adds its successor): saved one commit each, a crash between
        them could leave a retired key verifying again, or a new key that signed handles missing."""


def _interrupted(record: JournalRecord, now: float, make_result: MakeResult) -> JournalRecord:
    return dataclasses.replace(
        record, state=ended_state(record.state), updated_at=now, completed_at=now, result=make_result(record), job=None,
    )


def ended_state(state: str) -> str:
    """The terminal state of a child a stopped process left in ``state``: CANCELLED once a cancel was asked of it,
    as it would have ended had it stopped before the process did; else INTERRUPTED."""
    if state == SubagentState.CANCEL_REQUESTED.value:
        return SubagentState.CANCELLED.value
    return SubagentState.INTERRUPTED.value


class MemoryJournal:
    """The reference `Journal`: plain dicts, every write committed at once, nothing survives the process."""

    def __init__(self) -> None:
        self._records: dict[str, JournalRecord] = {}
        self._correlations: dict[tuple[str | None, str], str] = {}
        self._keys: dict[str, KeyRowTuple] = {}
        self._refused: list[str] = []

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        await self.sync()

    def put(self, record: JournalRecord) -> None:
        key = None if record.correlation_id is None else (record.parent_session_id, record.correlation_id)
        holder = self._correlations.get(key) if key is not None else None
        if holder is not None and holder != record.subagent_id:
            logger.error("journal: %s refused: correlation id held by %s", record.subagent_id, holder)
            self._refused.append(record.subagent_id)
            return
        old = self._records.get(record.subagent_id)
        if old is not None and old.correlation_id is not None:
            self._correlations.pop((old.parent_session_id, old.correlation_id), None)
        self._records[record.subagent_id] = record
        if key is not None:
            self._correlations[key] = record.subagent_id

    async def sync(self) -> None:
        if self._refused:
            ids, self._refused = tuple(self._refused), []
            raise JournalError(f"Correlation id already in use: {', '.join(ids)}.", code="JOURNAL_CONFLICT", subagent_ids=ids)

    def launch_dropped(self, subagent_id: str) -> bool:
        return False  # a launch is refused within its own `sync_launch` call: its caller hears at once

    async def sync_launch(self, subagent_ids: Collection[str]) -> None:
        # A write here cannot fail, and a conflict is refused at its put: only a refusal of one
        # of this launch's own records concerns it (the others wait for a plain sync).
        if not self._refused:
            return
        mine = [sid for sid in self._refused if sid in subagent_ids]
        if not mine:
            return
        self._refused = [sid for sid in self._refused if sid not in mine]
        ids = tuple(subagent_ids)
        for sid in ids:  # refused whole: nothing of it is left for a restart to call INTERRUPTED
            record = self._records.pop(sid, None)
            if record is not None and record.correlation_id is not None:
                key = (record.parent_session_id, record.correlation_id)
                if self._correlations.get(key) == sid:
                    del self._correlations[key]
        raise JournalError(f"Correlation id already in use: {', '.join(mine)}; nothing of its launch"
                           f" ({', '.join(ids)}) was kept.", code="JOURNAL_CONFLICT", subagent_ids=ids)

    async def get(self, subagent_id: str) -> JournalRecord | None:
        return self._records.get(subagent_id)

    async def find_correlation(self, parent_session_id: str | None, correlation_id: str) -> str | None:
        return self._correlations.get((parent_session_id, correlation_id))

    async def unfinished(self) -> list[JournalRecord]:
        return [r for r in self._records.values() if not r.terminal]

    async def interrupt_unfinished(
        self, now: float, make_result: MakeResult, *, keep: Collection[str] = ()
    ) -> list[str]:
        unfinished = [r for r in self._records.values() if not r.terminal and r.subagent_id not in keep]
        for record in [_interrupted(r, now, make_result) for r in unfinished]:  # a raising callback changes nothing
            self.put(record)
        await self.sync()
        return [r.subagent_id for r in unfinished]

    async def sweep(self, completed_before: float) -> int:
        expired = [
            r for r in self._records.values()
            if r.terminal and r.completed_at is not None and r.completed_at < completed_before
        ]
        for record in expired:
            del self._records[record.subagent_id]
            if record.correlation_id is not None:
                self._correlations.pop((record.parent_session_id, record.correlation_id), None)
        return len(expired)

    async def holds_records(self) -> bool:
        return bool(self._records)

    async def load_keys(self) -> list[KeyRowTuple]:
        return sorted(self._keys.values(), key=lambda row: (row[2], row[0]))

    async def save_key(self, kid: str, secret: bytes, created_at: float, retired_at: float | None) -> None:
        self._keys[kid] = (kid, bytes(secret), float(created_at), None if retired_at is None else float(retired_at))

    async def save_keys(self, rows: Collection[KeyRowTuple]) -> None:
        saved = [(kid, bytes(secret), float(created), None if retired is None else float(retired))
                 for kid, secret, created, retired in rows]  # every row converted before any is kept: all or none
        for row in saved:
            self._keys[row[0]] = row
