"""The service side of every child: launches, the engine's reports, stops, and the
completion that finishes each child exactly once.

Shared by the plugin API (`AsyncSubagentLifecycle`), the host's view and
delegate_task; it is the `EngineHost` the engine reports to. Records live in
memory while they matter and in the journal always.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import Iterable, Sequence

from agent import AgentSession, new_id
from lifecycle._capability import KeyRing, sign
from lifecycle._children import ChildHost, ChildSpec, build_child, plan_job
from lifecycle._completion import complete
from lifecycle._contract import (
    CONTRACT_VERSION,
    SubagentHandle,
    SubagentLifecycleError,
    SubagentState,
    SubagentUsage,
    make_terminal_result_json,
)
from lifecycle._engine import Engine
from lifecycle._job import PROCESS_EXIT, ChildJob, ChildOutcome
from lifecycle._journal import Journal
from lifecycle._record import Record
from lifecycle._routing import ChildRoute
from lifecycle._snapshot import ChildSnapshot, snapshot

log = logging.getLogger("lifecycle.service")

S = SubagentState
RECENT_PER_SESSION = 10
LAUNCH_ABANDONED = "cancelled before start: the launching turn was interrupted"


class Supervisor:
    """Owns the records of one service. Use from its event loop only."""

    def __init__(self, host: ChildHost, journal: Journal, engine: Engine) -> None:
        self.host = host
        self.journal = journal
        self.engine = engine
        self.keyring: KeyRing | None = None
        """Set once the service has started: launches are signed with it."""
        self._live: dict[str, Record] = {}
        """Children not finished yet, held strongly, in launch order."""
        self._by_parent: dict[str, dict[str, Record]] = {}
        self._finished: weakref.WeakValueDictionary[str, Record] = weakref.WeakValueDictionary()
        """Finished children someone still holds (a waiter, a delegate_task call); the rest are
        read back from the journal on demand, so memory does not grow with history."""
        self._correlations: dict[tuple[str | None, str], str] = {}
        """Correlation ids of live children; the journal answers for finished ones."""
        self._turns: dict[tuple[str, str], list[int]] = {}
        """[finished, launched] children per (parent session, parent turn) while any runs."""
        self._recent: dict[str, deque[ChildSnapshot]] = {}
        """The last few finished children per parent session, for listings such as /agents."""

    # -- EngineHost: what the engine reports ---------------------------------------------

    @property
    def clock(self):
        return self.host.clock

    @property
    def delegation(self):
        return self.host.delegation

    def build_child(self, job: ChildJob, project_context: str) -> AgentSession:
        record = self._live.get(job.subagent_id)
        if record is None or record.parent is None or record.model is None:
            raise RuntimeError(f"child {job.subagent_id} has no live parent in this process")
        return build_child(self.host, job, record.parent, record.model, project_context)

    async def starting(self, subagent_id: str) -> None:
        record = self._live.get(subagent_id)
        if record is None or not record.live or record.job is None:
            return
        if record.state is S.PENDING:
            record.set_state(S.STARTING, self.host.clock.time())
        job, hooks = record.job, self.host.hooks
        if hooks.has("subagent_start"):
            await hooks.run(
                "subagent_start", parent_session_id=job.parent_session_id, parent_turn_id=job.parent_turn_id,
                child_session_id=subagent_id, child_subagent_id=subagent_id, child_role=job.role,
                child_goal=job.goal,
            )

    def running(self, subagent_id: str) -> None:
        record = self._live.get(subagent_id)
        if record is None or not record.live:
            return
        record.ran = True
        record.started_at = now = self.host.clock.time()
        if record.state is not S.CANCEL_REQUESTED:
            record.set_state(S.RUNNING, now)

    async def finished(self, subagent_id: str, outcome: ChildOutcome) -> None:
        record = self._live.get(subagent_id)
        if record is None:
            log.warning("engine reported the end of unknown child %s; ignored", subagent_id)
            return
        await self._complete(record, outcome)

    # -- launching ----------------------------------------------------------------------------

    async def submit(
        self, parent: AgentSession, parent_turn_id: str, specs: Sequence[ChildSpec], *,
        correlation_id: str | None = None, durable: bool = True, routes: Sequence[ChildRoute | None] = (),
    ) -> list[Record]:
        """Journal a batch as PENDING in one commit, then queue every child on the engine.

        ``durable=False`` queues at once and lets the PENDING rows commit with the next
        batch: for callers that hand nothing out before the children finish (an inline
        delegate_task), whose terminal rows are committed after them anyway. If the commit
        fails, the children are forgotten (never started) and the error propagates."""
        if self.keyring is None:
            raise SubagentLifecycleError("The lifecycle service is not started.", code="NOT_STARTED")
        if correlation_id is not None:
            key = (parent.session_id, correlation_id)
            if key in self._correlations or await self.journal.find_correlation(*key) is not None:
                raise SubagentLifecycleError("Duplicate correlation_id for this parent session.")
        records = [self._new_record(parent, parent_turn_id, spec, correlation_id, routes[i] if i < len(routes) else None)
                   for i, spec in enumerate(specs)]
        if durable:
            try:
                await self.journal.sync()
            except asyncio.CancelledError:
                # The caller gave up (its turn was interrupted) while the launch was journaled:
                # the rows may be committed, so every child still ends, as interrupted, never PENDING.
                await asyncio.shield(asyncio.gather(*(
                    self._complete(r, ChildOutcome("interrupted", "interrupted", None, LAUNCH_ABANDONED))
                    for r in records)))
                raise
            except BaseException:
                for record in records:
                    self._forget(record)
                raise
        for record in records:
            self.engine.submit(record.job)
        return records

    def _new_record(
        self, parent: AgentSession, parent_turn_id: str, spec: ChildSpec, correlation_id: str | None,
        route: ChildRoute | None = None,
    ) -> Record:
        host = self.host
        subagent_id = new_id("sa-")
        if route is not None and route.model is not None:
            model = route.model
        else:
            model = host.child_model(parent) if host.child_model else parent.model
        job = plan_job(host, parent, spec, subagent_id=subagent_id, parent_turn_id=parent_turn_id, model=model,
                       route=route)
        created = host.clock.time()
        identity = dict(
            subagent_id=subagent_id, parent_session_id=parent.session_id, correlation_id=correlation_id,
            created_at=created, role=job.role, depth=job.depth, provider=job.provider, model=job.model,
        )
        handle = SubagentHandle(CONTRACT_VERSION, capability=sign(self.keyring, **identity), **identity)
        record = Record(handle, spec.goal, created, job)
        record.parent, record.model = parent, model
        self._live[subagent_id] = record
        self._by_parent.setdefault(parent.session_id, {})[subagent_id] = record
        self._turns.setdefault((parent.session_id, parent_turn_id), [0, 0])[1] += 1
        if correlation_id:
            self._correlations[(parent.session_id, correlation_id)] = subagent_id
        self.journal.put(record.journal_row())
        return record

    def adopt(self, record: Record) -> None:
        """Hold a live record read back after a restart, whose engine still runs it."""
        sid = record.handle.subagent_id
        self._live[sid] = record
        self._by_parent.setdefault(record.handle.parent_session_id or "", {})[sid] = record
        if record.handle.correlation_id:
            self._correlations[(record.handle.parent_session_id, record.handle.correlation_id)] = sid

    # -- stopping ------------------------------------------------------------------------------

    async def interrupt(self, records: Iterable[Record], reason: str, *, closing: bool = False) -> int:
        """Stop children because their parent (or the process, with ``closing``) stops: each
        ends INTERRUPTED (not CANCELLED) with the partial output it had, a queued one before
        this returns. Returns how many it reached: finished and finishing ones are skipped."""
        withdrawn, reached = [], 0
        for record in records:
            if not record.live:
                continue
            reached += 1
            record.closing = record.closing or closing
            sid = record.handle.subagent_id
            if self.engine.withdraw(sid):
                withdrawn.append(record)
            else:
                self.engine.interrupt(sid, reason)
        if withdrawn:  # completed together: their terminal rows share one commit
            await asyncio.gather(*(
                self._complete(r, ChildOutcome("interrupted", "interrupted", None, reason)) for r in withdrawn
            ))
        return reached

    async def cancel(self, record: Record, reason: str) -> None:
        """Request cancellation: CANCEL_REQUESTED now, CANCELLED once the child has stopped
        (or the state it reached first). Idempotent; a finished child is never changed."""
        if record.state.terminal or record.state is S.CANCEL_REQUESTED:
            return
        record.set_state(S.CANCEL_REQUESTED, self.host.clock.time())
        record.cancel_reason = reason[:500]
        if record.completing:
            return
        sid = record.handle.subagent_id
        if self.engine.withdraw(sid):
            await self._complete(record, ChildOutcome("interrupted", "interrupted", None, _before_start(record)))
        else:
            self.engine.interrupt(sid, f"cancellation requested: {record.cancel_reason}")

    async def close(self) -> None:
        """Stop every child this process would lose (all of them unless the engine's children
        survive a restart) and wait for the engine to wind down."""
        if not self.engine.survives_restart:
            await self.interrupt(list(self._live.values()), PROCESS_EXIT, closing=True)
        await self.engine.close()

    # -- finishing -----------------------------------------------------------------------------

    async def _complete(self, record: Record, outcome: ChildOutcome) -> None:
        """Finish a record exactly once: completion pipeline, terminal result, journal, waiters."""
        if record.completing or record.result is not None:
            return
        record.completing = True
        if outcome.status == "interrupted":
            if record.closing:
                outcome.error = PROCESS_EXIT
            elif record.state is S.CANCEL_REQUESTED and not record.ran:
                outcome.error = _before_start(record)
        if record.job is not None:
            await complete(self.host, record.job, record.parent, outcome)
        record.outcome = outcome
        now = self.host.clock.time()
        state = _terminal_state(outcome, record.state)
        result, result_json = make_terminal_result_json(
            record.handle,
            state,
            summary=outcome.summary,
            error_message=outcome.error,
            error_classification=None if state is S.SUCCEEDED else outcome.status.upper(),
            exit_reason=outcome.exit_reason,
            usage=SubagentUsage(
                outcome.api_calls, outcome.usage.prompt_tokens, outcome.usage.completion_tokens, outcome.cost_usd
            ),
            started_at=record.started_at,
            completed_at=now,
            duration_seconds=outcome.duration_seconds,
            handle_json=record.handle_json,
        )
        record.completed_at = now
        self.journal.put(record.journal_row(state=state, updated_at=now, result=result_json))
        try:
            await self.journal.sync()
        finally:
            # Readable only now, once journaled: nobody sees a result a crash could take back.
            record.result = result
            record.set_state(state, now)
            self._finished[record.handle.subagent_id] = record
            self._count_finished(record)
            self._forget(record)
            record.wake()

    def _count_finished(self, record: Record) -> None:
        parent_id = record.handle.parent_session_id or ""
        if record.job is not None:
            key = (parent_id, record.job.parent_turn_id)
            counts = self._turns.get(key)
            if counts is not None:
                counts[0] += 1
                if counts[0] >= counts[1]:
                    del self._turns[key]
        recent = self._recent.get(parent_id)
        if recent is None:
            recent = self._recent[parent_id] = deque(maxlen=RECENT_PER_SESSION)
        recent.append(snapshot(record, "finished"))

    def _forget(self, record: Record) -> None:
        """Drop a record from the live indexes and release what only a live child needs."""
        sid, handle = record.handle.subagent_id, record.handle
        self._live.pop(sid, None)
        siblings = self._by_parent.get(handle.parent_session_id or "")
        if siblings is not None:
            siblings.pop(sid, None)
            if not siblings:
                del self._by_parent[handle.parent_session_id or ""]
        if handle.correlation_id:
            self._correlations.pop((handle.parent_session_id, handle.correlation_id), None)
        record.job = record.parent = record.model = None

    # -- reading -------------------------------------------------------------------------------

    def get(self, subagent_id: str) -> Record | None:
        """The record of a live child, or of a finished one still in memory."""
        return self._live.get(subagent_id) or self._finished.get(subagent_id)

    def remember(self, record: Record) -> None:
        """Keep a finished record read back from the journal while someone holds it."""
        self._finished[record.handle.subagent_id] = record

    def children(self, parent_session_id: str) -> list[Record]:
        """Children of a session not in a terminal state, in launch order."""
        siblings = self._by_parent.get(parent_session_id)
        return [r for r in siblings.values() if not r.state.terminal] if siblings else []

    def recent(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        return tuple(self._recent.get(parent_session_id, ()))

    def turn_progress(self, parent_session_id: str, parent_turn_id: str) -> tuple[int, int]:
        counts = self._turns.get((parent_session_id, parent_turn_id))
        return (counts[0], counts[1]) if counts else (0, 0)

    def activity(self, record: Record) -> str:
        if record.state.terminal:
            return "finished"
        if record.completing:
            return "finishing"
        known = self.engine.activity(record.handle.subagent_id)
        if known is not None:
            return known
        return {S.PENDING: "waiting for a slot", S.STARTING: "starting"}.get(record.state, "running")

    def snapshot(self, record: Record) -> ChildSnapshot:
        return snapshot(record, self.activity(record))

    def sweep(self, cutoff: float) -> None:
        """Forget finished children completed before ``cutoff``, as the journal does."""
        for sid, record in list(self._finished.items()):
            if record.completed_at is not None and record.completed_at < cutoff:
                del self._finished[sid]
        for parent_id, recent in list(self._recent.items()):
            while recent and (recent[0].completed_at or 0.0) < cutoff:
                recent.popleft()
            if not recent:
                del self._recent[parent_id]


def _before_start(record: Record) -> str:
    return f"cancelled before start: {record.cancel_reason or ''}".rstrip(": ")


def _terminal_state(outcome: ChildOutcome, current: SubagentState) -> SubagentState:
    if outcome.status == "completed":
        return S.SUCCEEDED
    if outcome.status == "interrupted":
        return S.CANCELLED if current is S.CANCEL_REQUESTED else S.INTERRUPTED
    return S.FAILED
