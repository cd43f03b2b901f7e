"""The service's record of one child. Private and mutable: hosts get `ChildSnapshot`s,
plugins get results. Small on purpose: a thousand of them wait at once."""

from __future__ import annotations

import asyncio
import contextvars
import json
from typing import TYPE_CHECKING

from lifecycle._canonical import handle_json
from lifecycle._contract import _TERMINAL_VALUES, STATES, SubagentHandle, SubagentResult, SubagentState
from lifecycle._journal import JournalRecord

if TYPE_CHECKING:
    from agent import AgentSession, Model
    from lifecycle._job import ChildJob, ChildOutcome


class Record:
    """Mutated only on the event loop. ``result`` is set once, after it is journaled, and never changes."""

    __slots__ = (
        "handle", "job", "turn_id", "goal", "created_at", "state", "updated_at", "started_at", "completed_at",
        "result", "outcome", "parent", "model", "cancel_reason", "interrupt_reason", "steers", "kept_job", "inline",
        "ran", "closing", "completing", "ending", "keep_result", "context", "_waiters", "_handle_json", "__weakref__",
    )

    def __init__(self, handle: SubagentHandle, goal: str, created_at: float, job: ChildJob | None = None) -> None:
        self.handle = handle
        self.job = job
        """What the engine runs; None for a record read back from the journal, and once finished."""
        self.turn_id = job.parent_turn_id if job is not None else ""
        """The parent turn that launched it; empty when unknown (read back after a restart)."""
        self.goal = goal
        self.created_at = created_at
        self.state = STATES.PENDING
        self.updated_at = created_at
        self.started_at: float | None = None
        self.completed_at: float | None = None
        self.result: SubagentResult | None = None
        self.outcome: ChildOutcome | None = None
        """The full outcome for delegate_task entries; memory only (results are what persists)."""
        self.parent: AgentSession | None = None
        """The live parent session (for building in this process and the cost roll-up); None
        for a child re-attached after a restart, and once finished."""
        self.model: Model | None = None
        """The model chosen at launch, for an engine that builds the child in this process."""
        self.cancel_reason: str | None = None
        self.interrupt_reason: str | None = None
        """Why it was asked to stop as interrupted (``/stop``, ``/new``, its parent's stop)."""
        self.steers: str | None = None
        """Its journal row's steers (`JournalRecord.steers`): asked, and not sent when a process stopped."""
        self.kept_job: str | None = None
        """Its journal row's job (`JournalRecord.job`): set at launch when the engine's children outlive
        the process, until the engine reports it holds the job (`Supervisor.placed`)."""
        self.inline = False
        """Its journal row's `JournalRecord.inline`: its caller waits for it in this process."""
        self.ran = False
        """The engine reported it running: an interrupt now keeps partial output."""
        self.closing = False
        """Interrupted because the service is closing."""
        self.completing = False
        """The completion pipeline has begun; nothing may stop or finish it again."""
        self.ending: SubagentState | None = None
        """The terminal state it ends in, known from the moment it is completing (`Supervisor`): its
        state stays as it was until its result is published, and a cancel meanwhile must not pretend to stop it."""
        self.keep_result = False
        """Its handle was handed out: keep its result in memory for the reads that follow."""
        self.context: contextvars.Context | None = None
        """Once withdrawn from an engine that kept it (`Stopping._withdraw`): the context its job was submitted in,
        the launching turn's. The service ends it there, so its hooks see that turn, as those of a child that ran
        see it in its task, started in that context. None otherwise: not kept for every child (a child holds its
        context in its task), and a record read back from the journal has no launching turn in this process."""
        self._waiters: list[asyncio.Future] | None = None  # created only when someone waits
        self._handle_json: str | None = None

    @property
    def live(self) -> bool:
        """Neither finished nor finishing: an interrupt or cancel can still reach it."""
        return not self.completing and self.state._value_ not in _TERMINAL_VALUES  # `terminal`, inline

    def set_state(self, state: SubagentState, now: float) -> None:
        self.state = state
        self.updated_at = now

    def waiter(self, loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Future:
        """A future of the caller's own, resolved once the record is finished: cancelling it
        (a caller giving up) leaves every other waiter waiting. ``loop`` is the running loop
        when the caller has it at hand: on Python 3.11 every ``asyncio.get_running_loop()``
        costs a ``getpid()`` system call, and a fan-out waits for a thousand children."""
        future = (loop or asyncio.get_running_loop()).create_future()
        if self.result is not None:
            future.set_result(None)
        elif self._waiters is None:
            self._waiters = [future]
        else:
            self._waiters.append(future)
        return future

    def forget(self, future: asyncio.Future) -> None:
        """Drop a waiter that gave up (timed out or cancelled), so polling does not pile them up."""
        if self._waiters is not None and future in self._waiters:
            self._waiters.remove(future)

    def wake(self) -> None:
        waiters, self._waiters = self._waiters, None
        for future in waiters or ():
            if not future.done():
                future.set_result(None)

    def handle_json(self) -> str:
        """The handle's canonical JSON, encoded once while the child lives: its PENDING row,
        its terminal row and its result's text all carry it."""
        encoded = self._handle_json
        if encoded is None:
            encoded = self._handle_json = handle_json(self.handle)
        return encoded

    def release(self) -> None:
        """Drop what only a live child needs (its result's text holds the handle's JSON now)."""
        self.parent = self.model = self._handle_json = self.context = None

    @property
    def stop_request(self) -> str | None:
        """The reason the engine is asked to stop it with, if a stop was asked."""
        if self.state is STATES.CANCEL_REQUESTED:
            return f"cancellation requested: {self.cancel_reason}"
        return self.interrupt_reason

    def journal_row(
        self, *, state: SubagentState | None = None, updated_at: float | None = None,
        completed_at: float | None = None, result: str | None = None,
    ) -> JournalRecord:
        """What the journal keeps. PENDING and terminal rows are written, a stop request, and, for an engine
        whose children outlive the process, the row that forgets the job once the engine holds it (`Supervisor`
        decides): after a crash every other state reads as INTERRUPTED anyway, so they would buy nothing."""
        h = self.handle
        stop = self.cancel_reason if self.state is STATES.CANCEL_REQUESTED else self.interrupt_reason
        return JournalRecord._build(  # positional, in field order: this runs twice for every child
            h.subagent_id, h.parent_session_id, h.correlation_id, self.handle_json(),
            # _value_: the member's value without the enum property's descriptor call
            (state or self.state)._value_, self.created_at,
            updated_at if updated_at is not None else self.updated_at, self.started_at, completed_at, result, self.goal,
            stop, self.steers, self.kept_job, self.inline,
        )

    @classmethod
    def from_journal(cls, row: JournalRecord) -> Record:
        """The record of an unfinished child read back from the journal (an engine re-attached it, or
        starts it now from the job the journal kept)."""
        record = cls(SubagentHandle.from_dict(json.loads(row.handle)), row.goal, row.created_at)
        record.state = SubagentState(row.state)
        record.updated_at = row.updated_at
        record.started_at = row.started_at
        if record.state is STATES.CANCEL_REQUESTED:
            record.cancel_reason = row.stop_reason
        else:
            record.interrupt_reason = row.stop_reason
        record.steers = row.steers
        record.kept_job = row.job
        record.inline = row.inline
        return record
