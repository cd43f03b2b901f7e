"""The asyncio lifecycle service: launch and supervise children, durably.

Records live in memory while they matter and in the journal always; after a
restart, terminal records are read back from the journal, and records of children
that were running when the process died are INTERRUPTED, never re-run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any

from agent import AgentSession, active_turn, new_id
from lifecycle._capability import KeyRing, sign, verify
from lifecycle._child_run import ChildOutcome, ChildRun
from lifecycle._children import ChildHost, ChildSpec, check_toolsets, effective_role
from lifecycle._contract import (
    CONTRACT_VERSION,
    NOT_READY,
    RECONNECT_UNAVAILABLE,
    UNKNOWN_HANDLE,
    SubagentCancelResult,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentReconnectResult,
    SubagentResult,
    SubagentState,
    SubagentStatus,
    SubagentTerminalState,
    SubagentUsage,
    make_terminal_result_json,
    validate_request,
)
from lifecycle._engine import Engine, InProcessEngine
from lifecycle._journal import Journal, JournalRecord
from lifecycle._liveness import Watch, monitor
from lifecycle._record import Record
from lifecycle.settings import LifecycleSettings

log = logging.getLogger("lifecycle.service")

S = SubagentState
PROCESS_EXIT = "interrupted by process exit"
NO_PARENT = "No active parent session is available."
RECENT_PER_SESSION = 10


class AsyncSubagentLifecycle:
    """The asyncio twin of `SubagentLifecycle`: same operations, awaitable.

    The parent is the agent turn active in the caller's context. A handle works
    only inside the session that launched it; anything that does not verify is
    reported as UNKNOWN and never reaches a child.
    """

    def __init__(
        self,
        host: ChildHost,
        journal: Journal,
        *,
        settings: LifecycleSettings = LifecycleSettings(),
        engine: Engine | None = None,
    ) -> None:
        self.host = host
        self.journal = journal
        self.settings = settings
        self.engine = engine or InProcessEngine(settings.max_running)
        self.engine.bind(self._run)
        self.clock = host.clock
        self.keyring: KeyRing | None = None
        self._records: dict[str, Record] = {}
        """Live children, held strongly until they finish."""
        self._finished: weakref.WeakValueDictionary[str, Record] = weakref.WeakValueDictionary()
        """Finished children someone still holds (a waiter, a delegate_task call); the rest are
        read back from the journal on demand, so memory does not grow with history."""
        self._correlations: dict[tuple[str | None, str], str] = {}
        """Correlation ids of live children; the journal answers for finished ones."""
        self._turns: dict[tuple[str, str], list[int]] = {}
        """[finished, launched] children per (parent session, parent turn) while any runs."""
        self._recent: dict[str, deque[Record]] = {}
        """The last few finished children per parent session, for listings such as /agents."""
        self._sweeper: asyncio.Task | None = None
        self._monitor: asyncio.Task | None = None
        self._watches: dict[str, Watch] = {}
        self._closed = False
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- process lifetime ---------------------------------------------------------------

    async def start(self) -> None:
        """Open the journal, load the key ring, and mark children a dead process left
        running as INTERRUPTED."""
        self.loop = asyncio.get_running_loop()
        await self.journal.open()
        rows = await self.journal.load_keys()
        self.keyring = KeyRing(rows, clock=self.clock.time)
        await self._save_keys()
        now = self.clock.time()
        stale = await self.journal.interrupt_unfinished(now, lambda rec: self._interrupted_result(rec, now))
        if stale:
            log.warning("%d child(ren) were running when the process stopped; marked INTERRUPTED", len(stale))
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="lifecycle-sweeper")
        self._monitor = asyncio.create_task(
            monitor(self._watches.values, lambda: self.host.delegation, self.clock), name="lifecycle-liveness"
        )

    async def close(self) -> None:
        """Interrupt every running child, journal it as INTERRUPTED, and flush. Idempotent."""
        if self.keyring is None or self._closed:
            return
        self._closed = True
        for task in (self._sweeper, self._monitor):
            if task is not None:
                task.cancel()
        self._sweeper = self._monitor = None
        for record in list(self._records.values()):
            if not record.state.terminal:
                record.closing = True
                if self.engine.withdraw(record):
                    await self._complete(record, ChildOutcome("interrupted", "interrupted", None, PROCESS_EXIT))
                elif record.run is not None and record.run.session is not None:
                    record.run.session.interrupt(PROCESS_EXIT, hard=True)
        await self.engine.close()
        await self.journal.close()

    # -- operations -----------------------------------------------------------------------

    async def launch(self, request: SubagentLaunchRequest) -> SubagentHandle:
        """Validate, journal as PENDING and queue the child; returns at once with its handle.

        Raises `SubagentLifecycleError` for every rejection, naming the problem.
        """
        return await self.launch_for(_active_parent(), request)

    async def launch_for(self, parent: Any, request: SubagentLaunchRequest) -> SubagentHandle:
        """`launch` with the parent already resolved (the sync facade resolves it in its thread)."""
        if parent is None:
            raise SubagentLifecycleError(NO_PARENT, code="NO_PARENT")
        validate_request(request)
        if request.model is not None:
            raise SubagentLifecycleError("Per-launch model override is not supported; configure delegation.model.")
        session: AgentSession = parent.session
        check_toolsets(self.host, session, tuple(request.allowed_toolsets or ()))
        if request.parent_session_id is not None and request.parent_session_id != session.session_id:
            raise SubagentLifecycleError("parent_session_id does not match the active session.")
        spec = ChildSpec(
            goal=request.goal,
            context=request.context,
            role=request.role,
            allowed_toolsets=tuple(request.allowed_toolsets) if request.allowed_toolsets else None,
            metadata=dict(request.metadata),
        )
        record = await self.submit(session, parent.turn_id, spec, correlation_id=request.correlation_id)
        return record.handle

    async def submit(
        self, parent: AgentSession, parent_turn_id: str, spec: ChildSpec, *, correlation_id: str | None = None
    ) -> Record:
        """The host path shared with delegate_task: journal durably, then queue on the engine."""
        self._require_started()
        key = (parent.session_id, correlation_id) if correlation_id else None
        if key is not None and (
            key in self._correlations or await self.journal.find_correlation(*key) is not None
        ):
            raise SubagentLifecycleError("Duplicate correlation_id for this parent session.")
        (record,) = await self.submit_many(parent, parent_turn_id, [spec], correlation_id=correlation_id)
        return record

    async def submit_many(
        self, parent: AgentSession, parent_turn_id: str, specs: list[ChildSpec], *,
        correlation_id: str | None = None, durable_launch: bool = True,
    ) -> list[Record]:
        """Journal a batch as PENDING in one commit, then queue every child.

        ``durable_launch=False`` queues at once and lets the PENDING rows commit with the
        next batch: for callers that hand no handle out before the children finish (an
        inline delegate_task), whose terminal rows are committed after them anyway."""
        self._require_started()
        records = [self._new_record(parent, parent_turn_id, spec, correlation_id) for spec in specs]
        if durable_launch:
            await self.journal.sync()
        for record in records:
            self.engine.submit(record)
        return records

    def _new_record(
        self, parent: AgentSession, parent_turn_id: str, spec: ChildSpec, correlation_id: str | None
    ) -> Record:
        subagent_id = new_id("sa-")
        depth = parent.depth + 1
        role = effective_role(spec.role, depth, self.host.delegation.max_spawn_depth)
        model = self.host.child_model(parent) if self.host.child_model else parent.model
        created = self.clock.time()
        identity = dict(
            subagent_id=subagent_id, parent_session_id=parent.session_id, correlation_id=correlation_id,
            created_at=created, role=role, depth=depth,
            provider=type(model).__name__, model=getattr(model, "name", None),
        )
        handle = SubagentHandle(CONTRACT_VERSION, capability=sign(self.keyring, **identity), **identity)
        record = Record(handle, spec.goal, created)
        record.run_turn_id = parent_turn_id
        record.run = ChildRun(self.host, parent, spec, subagent_id, parent_turn_id, model=model)
        self._records[subagent_id] = record
        self._turns.setdefault((parent.session_id, parent_turn_id), [0, 0])[1] += 1
        if correlation_id:
            self._correlations[(parent.session_id, correlation_id)] = subagent_id
        self.journal.put(record.journal_row())
        return record

    async def status(self, handle: Any) -> SubagentStatus:
        record = await self._lookup(handle)
        if record is None:
            return SubagentStatus(_shown(handle), S.UNKNOWN, self.clock.time(), UNKNOWN_HANDLE)
        return SubagentStatus(record.handle, record.state, record.updated_at)

    async def wait(self, handle: Any, timeout_seconds: float | None = None) -> SubagentTerminalState:
        """Wait until the child is terminal or ``timeout_seconds`` pass; the child keeps
        running after a timed-out wait."""
        record = await self._lookup(handle)
        if record is None:
            return SubagentTerminalState(_shown(handle), S.UNKNOWN, completed=True, diagnostic=UNKNOWN_HANDLE)
        if record.result is None:
            waiter = record.waiter()
            timer = None if timeout_seconds is None else self.loop.call_later(max(0.0, timeout_seconds), _time_out, waiter)
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                record.forget(waiter)
            if record.result is None:
                return SubagentTerminalState(record.handle, record.state, completed=False, timed_out=True)
        return SubagentTerminalState(record.handle, record.state, completed=True)

    async def cancel(self, handle: Any, reason: str = "cancelled by the parent") -> SubagentCancelResult:
        """Ask the child to stop at its next safe boundary. Never reports completion:
        `wait`/`result` show CANCELLED (or what it reached first) once it has stopped."""
        record = await self._lookup(handle)
        if record is None:
            return SubagentCancelResult(False, S.UNKNOWN, unknown_handle=True, message="Unknown subagent handle.")
        if record.result is not None or record.state.terminal:
            return SubagentCancelResult(
                False, record.state, already_terminal=True, message=f"The subagent already finished ({record.state.value})."
            )
        await self._request_cancel(record, str(reason))
        return SubagentCancelResult(True, S.CANCEL_REQUESTED, message="Cancellation requested.")

    async def result(self, handle: Any) -> SubagentResult:
        record = await self._lookup(handle)
        if record is None:
            return SubagentResult(_shown(handle), S.UNKNOWN, False, error_classification=UNKNOWN_HANDLE)
        if record.result is None:
            return SubagentResult(record.handle, record.state, False, error_classification=NOT_READY)
        return record.result

    async def reconnect(self, handle: Any) -> SubagentReconnectResult:
        """A pure lookup, also after a restart; it never starts a replacement child."""
        record = await self._lookup(handle)
        if record is None:
            return SubagentReconnectResult(False, S.UNKNOWN, RECONNECT_UNAVAILABLE)
        return SubagentReconnectResult(True, record.state)

    # -- key ring ---------------------------------------------------------------------------

    async def rotate_key(self) -> str:
        """Sign new handles with a fresh key; handles signed before keep working. Returns its id."""
        self._require_started()
        kid = self.keyring.rotate()
        await self._save_keys()
        return kid

    async def retire_key(self, kid: str) -> None:
        """Revoke every handle signed with ``kid`` (they read as unknown from now on)."""
        self._require_started()
        self.keyring.retire(kid)
        await self._save_keys()

    async def _save_keys(self) -> None:
        for row in self.keyring.export():
            await self.journal.save_key(*row)

    # -- host-only views (the gateway's /agents and /stop) ---------------------------------

    def children_of(self, parent_session_id: str) -> list[Record]:
        """Live (non-terminal) children of a session, oldest first."""
        return [
            r for r in self._records.values()
            if r.handle.parent_session_id == parent_session_id and not r.state.terminal
        ]

    async def cancel_children(self, parent_session_id: str, reason: str) -> int:
        """Cancel every live child of a session (``/stop``, ``/new``); returns how many."""
        records = self.children_of(parent_session_id)
        for record in records:
            await self._request_cancel(record, reason)
        return len(records)

    def turn_progress(self, parent_session_id: str, parent_turn_id: str) -> tuple[int, int]:
        """(finished, launched) children of one parent turn; (0, 0) once all have finished."""
        counts = self._turns.get((parent_session_id, parent_turn_id))
        return (counts[0], counts[1]) if counts else (0, 0)

    def recent_of(self, parent_session_id: str) -> list[Record]:
        """The most recently finished children of a session, newest last (a bounded window)."""
        return list(self._recent.get(parent_session_id, ()))

    async def interrupt_children(self, parent_session_id: str, reason: str) -> int:
        """Interrupt every live child of a session (``/stop``): each ends INTERRUPTED with
        its partial output. Returns how many."""
        records = self.children_of(parent_session_id)
        for record in records:
            await self.interrupt_child(record, reason)
        return len(records)

    def _count_finished(self, record: Record) -> None:
        parent_id = record.handle.parent_session_id or ""
        turn_id = record.run_turn_id
        key = (parent_id, turn_id)
        counts = self._turns.get(key)
        if counts is not None:
            counts[0] += 1
            if counts[0] >= counts[1]:
                del self._turns[key]
        self._recent.setdefault(parent_id, deque(maxlen=RECENT_PER_SESSION)).append(record)

    async def interrupt_child(self, record: Record, reason: str) -> None:
        """Stop a child because its parent was interrupted: it ends INTERRUPTED (not
        CANCELLED) with the partial output it had."""
        if record.state.terminal or record.result is not None:
            return
        if self.engine.withdraw(record):
            await self._complete(record, ChildOutcome("interrupted", "interrupted", None, reason))
        elif record.run is not None and record.run.session is not None:
            record.run.session.interrupt(reason, hard=True)
        else:  # still starting: it checks this flag before its first model call
            record.stop_reason = reason

    async def _request_cancel(self, record: Record, reason: str) -> None:
        if record.state.terminal or record.state is S.CANCEL_REQUESTED:
            return
        record.set_state(S.CANCEL_REQUESTED, self.clock.time())
        record.cancel_reason = reason[:500]
        if self.engine.withdraw(record):
            await self._complete(record, _cancelled_before_start(record))
        elif record.run is not None and record.run.session is not None:
            record.run.session.interrupt(f"cancellation requested: {record.cancel_reason}", hard=True)

    # -- running a child ------------------------------------------------------------------

    async def _run(self, record: Record) -> None:
        outcome: ChildOutcome
        try:
            if record.state is S.CANCEL_REQUESTED:
                outcome = _cancelled_before_start(record)
            else:
                record.set_state(S.STARTING, self.clock.time())
                run = record.run
                await run.start()
                if record.state is S.CANCEL_REQUESTED or record.closing:
                    outcome = _cancelled_before_start(record)
                elif record.stop_reason is not None:
                    outcome = ChildOutcome("interrupted", "interrupted", None, record.stop_reason)
                else:
                    record.started_at = self.clock.time()
                    record.set_state(S.RUNNING, record.started_at)
                    sid = record.handle.subagent_id
                    self._watches[sid] = Watch(run.session, self.clock.monotonic(), run.stop_for_timeout)
                    try:
                        outcome = await run.execute()
                    finally:
                        self._watches.pop(sid, None)
        except asyncio.CancelledError:
            outcome = ChildOutcome("interrupted", "interrupted", None, PROCESS_EXIT)
            await self._complete(record, outcome)
            raise
        except Exception as exc:
            log.exception("child %s failed to start", record.handle.subagent_id)
            outcome = ChildOutcome("error", "error", None, f"{type(exc).__name__}: {exc}")
        await self._complete(record, outcome)

    async def _complete(self, record: Record, outcome: ChildOutcome) -> None:
        """Finish a record exactly once: completion pipeline, terminal result, journal, waiters."""
        if record.result is not None or record.completing:
            return
        record.completing = True
        if record.closing and outcome.status == "interrupted":
            outcome.error = PROCESS_EXIT
        if record.run is not None:
            await record.run.finish(outcome)
        record.outcome = outcome
        now = self.clock.time()
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
        record.run = None
        self.journal.put(record.journal_row(state=state, updated_at=now, result=result_json))
        try:
            await self.journal.sync()
        finally:
            # Readable only now, once journaled: nobody sees a result a crash could take back.
            record.result = result
            record.set_state(state, now)
            sid = record.handle.subagent_id
            self._finished[sid] = record
            self._records.pop(sid, None)
            self._correlations.pop((record.handle.parent_session_id, record.handle.correlation_id), None)
            self._count_finished(record)
            record.wake()

    # -- lookups and upkeep ---------------------------------------------------------------

    async def _lookup(self, handle: Any) -> Record | None:
        """The record a verified handle of the active parent names, else None."""
        if self.keyring is None:
            return None
        turn = active_turn()
        if turn is None:
            return None
        if isinstance(handle, SubagentHandle):
            record = self._records.get(handle.subagent_id)
            record = record or self._finished.get(handle.subagent_id)
            # The very object we issued needs no second HMAC, as long as its key is not retired.
            if record is not None and record.handle is handle and self.keyring.signs_for(handle.capability):
                return record if turn.session.session_id == handle.parent_session_id else None
        elif isinstance(handle, Mapping):
            try:
                handle = SubagentHandle.from_dict(handle)
            except SubagentLifecycleError:
                return None
        if not verify(self.keyring, handle) or turn.session.session_id != handle.parent_session_id:
            return None
        record = self._records.get(handle.subagent_id) or self._finished.get(handle.subagent_id)
        if record is None:
            row = await self.journal.get(handle.subagent_id)
            if row is None or row.result is None:
                return None
            try:
                record = Record.from_journal(row)
            except (ValueError, SubagentLifecycleError):
                log.error("journal record of %s is unreadable; treating its handle as unknown", handle.subagent_id)
                return None
            self._finished[handle.subagent_id] = record
        return record if record.handle == handle else None

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_seconds)
            try:
                await self.sweep()
            except Exception:
                log.exception("retention sweep failed")

    async def sweep(self) -> int:
        """Forget terminal records older than the retention window, in memory and in the journal."""
        cutoff = self.clock.time() - self.settings.retention_seconds
        for sid, record in list(self._finished.items()):
            if record.completed_at is not None and record.completed_at < cutoff:
                del self._finished[sid]
        return await self.journal.sweep(cutoff)

    def _require_started(self) -> None:
        if self.keyring is None:
            raise SubagentLifecycleError("The lifecycle service is not started.", code="NOT_STARTED")

    def _interrupted_result(self, row: JournalRecord, now: float) -> str:
        handle = SubagentHandle.from_dict(json.loads(row.handle))
        return make_terminal_result_json(
            handle, S.INTERRUPTED, error_message=PROCESS_EXIT, error_classification="INTERRUPTED",
            exit_reason="interrupted", started_at=row.started_at, completed_at=now,
        )[1]


def _active_parent() -> Any:
    return active_turn()


def _time_out(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _shown(handle: Any) -> Any:
    """What to echo back for a handle that did not verify: the object itself when it is a handle."""
    if isinstance(handle, SubagentHandle):
        return handle
    if isinstance(handle, Mapping):
        try:
            return SubagentHandle.from_dict(handle)
        except SubagentLifecycleError:
            pass
    return _UNKNOWN_HANDLE


_UNKNOWN_HANDLE = SubagentHandle(CONTRACT_VERSION, "unknown", None, None, 0.0, None, None, "leaf", 0, "")


def _cancelled_before_start(record: Record) -> ChildOutcome:
    return ChildOutcome("interrupted", "interrupted", None, f"cancelled before start: {record.cancel_reason or ''}".rstrip(": "))


def _terminal_state(outcome: ChildOutcome, current: SubagentState) -> SubagentState:
    if outcome.status == "completed":
        return S.SUCCEEDED
    if outcome.status == "interrupted":
        return S.CANCELLED if current is S.CANCEL_REQUESTED else S.INTERRUPTED
    return S.FAILED
