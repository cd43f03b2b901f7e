"""The service side of every child: launches, the engine's reports, and the completion that
finishes each child exactly once. Its stops (`lifecycle._stopping`) and its start-up
(`lifecycle._start_adoption`) are bases of the `Supervisor`, in modules of their own.

Shared by the plugin API (`AsyncSubagentLifecycle`), the host's view and
delegate_task; it is the `EngineHost` the engine reports to. Records live in
memory while they matter and in the journal always.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat

from agent import AgentSession, new_id
from lifecycle._capability import KeyRing, sign
from lifecycle._children import ChildHost, ChildSpec, build_child, plan_job
from lifecycle._completion import listening, notify, roll_up, terminal
from lifecycle._contract import (
    _TERMINAL_VALUES,
    CONTRACT_VERSION,
    STATES,
    SubagentHandle,
    SubagentLifecycleError,
    SubagentResult,
    SubagentState,
)
from lifecycle._engine import Engine
from lifecycle._job import PROCESS_EXIT, ChildJob, ChildOutcome
from lifecycle._journal import Journal, JournalError
from lifecycle._record import Record
from lifecycle._routing import ChildRoute
from lifecycle._snapshot import ChildSnapshot, snapshot
from lifecycle._start_adoption import StartAdoption
from lifecycle._start_hold import StartHold
from lifecycle._stopping import CLOSED, Stopping, _before_start
from lifecycle._tallies import Tallies

log = logging.getLogger("lifecycle.service")

S = STATES
LAUNCH_ABANDONED = "cancelled before start: the launching turn was interrupted"
NOT_STARTED = "The lifecycle service is not started."
CLOSING = "The lifecycle service is closing."
PARENT_ENDED = "interrupted: the subagent that launched it ended"
"""The error of a child whose parent, itself a subagent, ended before it (`Supervisor._orphaned`)."""


class Supervisor(StartAdoption, Stopping):
    """Owns the records of one service. Use from its event loop only. Its start-up (the adoption of the
    records a previous process left, the release of what was held meanwhile) and its stops (of children, and
    its `close`) are its bases': no child passes them on its way from launch to result."""

    def __init__(self, host: ChildHost, journal: Journal, engine: Engine) -> None:
        self.host = host
        self.journal = journal
        self.engine = engine
        self.keyring: KeyRing | None = None
        """Set once the service has started: launches are signed with it."""
        self.closing = False
        """Set when `close` begins: from then on nothing launches (the engine would not run it)."""
        self.closed = False
        """Set by the service once its close has ended, its journal closed too."""
        self.sealed = False
        """Set by the service as it closes the journal: from then on nothing reads or writes it, so a
        child known only there reads as unknown, and a stop, which may have to be journaled, is refused."""
        self._live: dict[str, Record] = {}
        """Children not finished yet, held strongly, in launch order."""
        self._by_parent: dict[str, dict[str, Record]] = {}
        self._correlations: dict[tuple[str | None, str], str] = {}
        """Correlation ids of live children; the journal answers for finished ones."""
        self._unpublished: list[tuple[Record, SubagentResult]] = []
        """Finished children whose terminal rows are put but not yet known to be committed."""
        self._publisher: asyncio.Task | None = None
        self._given_up: set[asyncio.Future] = set()
        """Work whose callers gave up, held until it ends (the loop holds tasks weakly): launches
        that were being journaled (`_abandon`), children being finished (`_complete_now`)."""
        self._endings: dict[asyncio.Future, tuple[asyncio.Future, Sequence[Record]]] = {}
        """What `_complete_now` waits for, each with its end and its records, until settled: by that end, or by a
        close whose grace is over, their hooks all that runs (`Stopping._give_up_hooks`)."""
        self._hooks_left: set[asyncio.Future] = set()
        """Ends of those given up on, their hooks running on: held until they end (the loop holds tasks weakly)."""
        self._hooks_given_up = False
        """Set once the close's grace is over: from then on, nothing the service finishes itself waits for hooks."""
        self._launching = 0
        """Launches between their records and their end, the children the service is finishing itself
        (`_complete_now`), and the work whose callers gave up until it ends: `close` waits for them, so
        none meets a closed engine or journal."""
        self._drained: asyncio.Future | None = None
        """Set by `close` while it waits for ``_launching`` to fall to zero."""
        self._start_hold: StartHold | None = None
        """What the engine reported while the service started, from `adopting` until `release`; None but then."""
        self.tallies = Tallies()
        """Recent results, the last few finished children per session, each turn's progress."""
        self.results_needed_since: Callable[[], float | None] = lambda: None
        """The host's `HostView.keep_results_since`: the time since which finished children's results
        must outlive the retention window (None: none must)."""

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
        # `Record.live` and `Record.stop_request` spelled out, here and in `running`: every child passes both,
        # and calling a property costs more than its test.
        if record is None or record.completing or record.state._value_ in _TERMINAL_VALUES or record.job is None:
            hold = self._start_hold
            if record is None and hold is not None and hold.adopting:  # re-attaching at start: for `adopt`
                hold.started[subagent_id] = None
            return
        state = record.state
        if state is S.CANCEL_REQUESTED or record.interrupt_reason is not None:
            # Asked to stop before it started (an engine elsewhere hears of the start late): it ends as a
            # child that never started, with no `subagent_start`, as an in-process one is never built.
            return
        if state is S.PENDING:
            record.state, record.updated_at = S.STARTING, self.host.clock.time()
        if self._start_hold is not None:  # the host's `subagent_start` hooks may not be registered yet
            self._start_hold.started[subagent_id] = None
            return
        # Looked for before the coroutine is made: most hosts have no such hooks, and every child starts here.
        if "subagent_start" in self.host.hooks.registered:
            await self._start_hooks(subagent_id, record.job)

    async def _start_hooks(self, subagent_id: str, job: ChildJob) -> None:
        hooks = self.host.hooks
        if "subagent_start" in hooks.registered:
            await hooks.run(
                "subagent_start", parent_session_id=job.parent_session_id, parent_turn_id=job.parent_turn_id,
                child_session_id=subagent_id, child_subagent_id=subagent_id, child_role=job.role,
                child_goal=job.goal,
            )

    def running(self, subagent_id: str, started_at: float | None = None) -> None:
        record = self._live.get(subagent_id)
        if record is None:
            hold = self._start_hold
            if hold is not None and hold.adopting:  # re-attaching at start: for `adopt`
                hold.running[subagent_id] = started_at
            return
        state = record.state
        if record.completing or state._value_ in _TERMINAL_VALUES:  # not `live`
            return
        record.ran = True
        now = self.host.clock.time()
        # Another machine's clock said when it began: never after now here, which durations are measured to.
        record.started_at = now if started_at is None else min(started_at, now)
        if state is not S.CANCEL_REQUESTED:
            record.state, record.updated_at = S.RUNNING, now

    def placed(self, subagent_id: str) -> None:
        record = self._live.get(subagent_id)
        if record is None:
            hold = self._start_hold
            if hold is not None and hold.adopting:  # the engine re-attaching at start: adopted once it returns
                hold.placed.add(subagent_id)
            return
        self._forget_job(record)

    def _forget_job(self, record: Record) -> None:
        if record.kept_job is None:
            return
        record.kept_job = None  # a restart finds the child where it runs from now on
        if record.live:  # else its terminal row is written without the job
            self.journal.put(record.journal_row())

    def unsent_steers(self, subagent_id: str, steers: Sequence[Mapping[str, str]]) -> None:
        record = self._live.get(subagent_id)
        if record is None or not record.live:
            return
        kept = json.dumps(list(steers)) if steers else None
        if kept != record.steers:  # the journal's copy is rewritten only when it changes
            record.steers = kept
            self.journal.put(record.journal_row())

    async def finished(self, subagent_id: str, outcome: ChildOutcome) -> None:
        """Finish a child exactly once: the completion pipeline, then the terminal result, put
        to the journal. Returns before that is committed: `_publish` makes the result readable
        (and wakes waiters) once it is, for every child finished meanwhile at once. While the service
        starts, the end is held instead, and finished at `release`."""
        record = self._live.get(subagent_id)
        if record is None or record.completing:
            hold = self._start_hold
            if record is None and hold is not None and hold.adopting:  # re-attaching at start: for `adopted`
                hold.ended[subagent_id] = outcome
            elif record is None:
                log.warning("engine reported the end of unknown or finished child %s; ignored", subagent_id)
            return
        self._completing(record, outcome)
        if subagent_id in self._by_parent:  # its own children (a plugin's tool it inherited launched them)
            self._orphaned(subagent_id)
        if self._start_hold is not None:  # the host's `subagent_stop` hooks may not be registered yet
            self._start_hold.ended[subagent_id] = outcome
            return
        await self._finish(record, outcome)

    def _orphaned(self, subagent_id: str) -> None:
        """Stop the live children of a child that ends, and theirs: their handles work only in its session, which
        has no later turn, and the host reaches a session's children through the live ones (`with_descendants`), so
        left running they spent for no one, out of reach of ``/stop`` and ``/new``."""
        orphans = self.with_descendants(self.children(subagent_id))
        if not orphans:
            return
        # Asked now, not in a task of its own: a close beginning before that task ran stopped them first, and they
        # ended interrupted by process exit, as lost children do, though their parent's end came first.
        withdrawn, _ = self._stop(orphans, PARENT_ENDED)
        if withdrawn:
            self._carry_on(asyncio.ensure_future(self._withdrawn(withdrawn, PARENT_ENDED)))

    @staticmethod
    def _completing(record: Record, outcome: ChildOutcome) -> None:
        """Its end is known: out of every stop's reach from now on (`Record.live`), it ends in ``ending``."""
        record.completing = True
        record.kept_job = None  # never handed to an engine again
        # Final now: no report (`starting`, `running`) nor stop (`cancel`, `interrupt`) changes a completing state.
        record.ending = _terminal_state(outcome, record.state)

    async def _finish(self, record: Record, outcome: ChildOutcome) -> None:
        """`finished` for a record marked completing."""
        if outcome.status == "interrupted":
            if record.closing:
                outcome.error = PROCESS_EXIT
            elif record.state is S.CANCEL_REQUESTED and not record.ran:
                outcome.error = _before_start(record)
        record.outcome = outcome  # before the hooks: a close cannot wait for them (`_journal_ends_in_hooks`)
        if self._hooks_given_up:  # the close's grace is over: not waited for if the service finishes it itself
            self._give_up_hooks()
        if record.job is not None and listening(self.host):
            await notify(self.host, record.job, outcome, ran_here=self.engine.runs_here)
        if record.completed_at is not None:  # the close journaled it meanwhile (or as its grace was over)
            return
        self._end(record, outcome)

    def _end(self, record: Record, outcome: ChildOutcome) -> None:
        """Put a finishing child's terminal row, to be published once committed."""
        roll_up(record.parent, record.turn_id, outcome)
        now = self.host.clock.time()
        result, row = terminal(record, outcome, record.ending, now)
        record.completed_at = now
        self.journal.put(row)
        self._unpublished.append((record, result))
        if self._publisher is None:
            self._publisher = asyncio.ensure_future(self._publish())

    # -- launching ----------------------------------------------------------------------------

    async def submit(
        self, parent: AgentSession, parent_turn_id: str, specs: Sequence[ChildSpec], *,
        correlation_id: str | None = None, durable: bool = True, handles_out: bool = False,
        routes: Sequence[ChildRoute | None] = (), before_commit: Callable[[Sequence[Record]], None] | None = None,
    ) -> list[Record]:
        """Journal a batch as PENDING in one commit, then queue every child on the engine.

        ``durable=False`` queues at once and lets the PENDING rows commit with the next
        batch: for callers that hand nothing out before the children finish (an inline
        delegate_task), whose terminal rows are committed after them anyway. Nor are their jobs
        kept for a restart (`Record.kept_job`): the caller waiting for them goes with the process,
        so a child the engine never got would run for no one (the gateway runs an interrupted
        turn again, delegating anew); the next start ends it INTERRUPTED instead, and stops one
        the engine still runs (`Record.inline`).
        ``handles_out``: the caller hands the handles out (the plugin API), so the results
        are kept in memory for a while, for the reads that follow. ``routes``: each spec's
        delegation route (or None), in order; empty when none is routed. If the commit fails, the
        children are forgotten (never started, and the journal drops their records: see
        `Journal.sync_launch`) and its `JournalError` propagates. ``before_commit(records)`` is called once
        the rows are put, before their commit is awaited (with ``durable``), and must not raise: what it
        writes to the journal's `SqliteDatabase` then commits in the same transaction as they do (a host's
        record of the batch, which a crash or a full disk between two commits left without its children,
        or them without it). A caller cancelled meanwhile
        waits for the commit: a refused launch leaves no trace, a committed one ends INTERRUPTED.
        Refused (`check_open`) before the service starts and once its close has begun; `close`
        waits for the launches it finds being journaled, whose children then end as every child
        does at close."""
        if self.keyring is None or self.closing:
            self.check_open()
        if correlation_id is not None:
            key = (parent.session_id, correlation_id)
            if key in self._correlations or await self.journal.find_correlation(*key) is not None:
                raise SubagentLifecycleError("Duplicate correlation_id for this parent session.")
            if self.closing:  # it began during the lookup, and stopped every child but these
                self.check_open()
        keep_jobs, inline = durable and self.engine.survives_restart, not durable
        # Plain loops, not comprehensions: each of those is a function call of its own (CPython 3.11),
        # and a plugin launches its children one at a time. Every record is made before any is held or
        # journaled: one that cannot be (a host's child model raising) leaves none of the batch behind,
        # PENDING for good.
        records, ids = [], []
        for spec, route in zip(specs, routes, strict=True) if routes else zip(specs, repeat(None)):
            record = self._new_record(parent, parent_turn_id, spec, correlation_id, keep_jobs, inline, route)
            if handles_out:
                record.keep_result = True
            records.append(record)
        live, by_parent, tallies, journal = self._live, self._by_parent, self.tallies, self.journal
        for record in records:  # held and journaled PENDING (inline: every launch passes here)
            handle = record.handle
            sid, pid = handle.subagent_id, handle.parent_session_id
            live[sid] = record
            siblings = by_parent.get(pid)
            if siblings is None:
                siblings = by_parent[pid] = {}
            siblings[sid] = record
            tallies.launched(pid, parent_turn_id)
            if correlation_id:
                self._correlations[(pid, correlation_id)] = sid
            journal.put(record.journal_row())
            ids.append(sid)
        self._launching += 1
        try:
            if durable:
                if before_commit is not None:  # once per batch, never per child
                    before_commit(records)
                try:
                    await self.journal.sync_launch(ids)
                except asyncio.CancelledError:
                    # The caller gave up (its turn was interrupted): the cancelled wait left the records
                    # pending, so a second wait, which the caller's cancellation cannot reach, learns how
                    # the commit carrying them ends. Only here, not shielded up front: a task per launch
                    # is a tenth of a child's cost (issue 15).
                    abandoning = asyncio.ensure_future(self._abandon(records, asyncio.ensure_future(
                        self.journal.sync_launch(ids))))
                    self._carry_on(abandoning)  # counted apart: cancelled again, the caller leaves before it ends
                    await asyncio.shield(abandoning)
                    raise
                except BaseException:
                    self._not_launched(records)
                    raise
            stopped = []
            for record in records:
                if record.interrupt_reason is not None:
                    # Stopped while journaled (`interrupt`, `close`): the engine, asked before it had the
                    # job, could not stop it, so it is never queued, and ends as a withdrawn one does.
                    stopped.append(record)
                else:
                    self.engine.submit(record.job)
            if stopped:
                await self._complete_now(stopped, lambda r: ChildOutcome("interrupted", "interrupted", None,
                                                                         r.interrupt_reason))
        finally:
            self._launching -= 1
            if self._drained is not None:  # `close` is waiting
                self._launch_ended()
        return records

    def check_open(self) -> None:
        """Raise `SubagentLifecycleError` unless children may be launched now: ``NOT_STARTED``
        before the service has started, ``CLOSING`` once its close has begun, ``CLOSED`` once
        that has ended (a close before any start too)."""
        if self.closed:  # before the key ring: a service closed before it started is closed, not unstarted
            raise SubagentLifecycleError(CLOSED, code="CLOSED")
        if self.closing:
            raise SubagentLifecycleError(CLOSING, code="CLOSING")
        if self.keyring is None:
            raise SubagentLifecycleError(NOT_STARTED, code="NOT_STARTED")

    def _carry_on(self, work: asyncio.Future) -> None:
        """Let ``work`` whose caller gave up run to its end, which `close` waits for."""
        self._given_up.add(work)
        self._wait_at_close(work)

    def _wait_at_close(self, work: asyncio.Future) -> None:
        """Count ``work`` until it ends: `close` waits for it."""
        self._launching += 1
        work.add_done_callback(self._carried_on)

    def _carried_on(self, work: asyncio.Future) -> None:
        if work in self._given_up:  # else its caller heard how it ended
            self._given_up.discard(work)
            if not work.cancelled() and work.exception() is not None:
                log.error("ending children whose caller gave up failed", exc_info=work.exception())
        self._launching -= 1
        self._launch_ended()

    def _launch_ended(self) -> None:
        drained = self._drained
        if not self._launching and drained is not None and not drained.done():
            drained.set_result(None)

    async def _abandon(self, records: Sequence[Record], journaling: asyncio.Future) -> None:
        """A launch whose caller gave up while it was journaled: once the commit is decided, children
        the journal refused leave no trace (nothing of them was kept); journaled ones must end, as
        interrupted, never left PENDING. `close` waits for it, so they end before the journal closes."""
        try:
            await journaling
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # this work's own (the process ends): its children are the next start's, as after a kill
            # The journal's wait itself was cancelled: it keeps the records, which may be committed.
        except Exception as exc:
            # A refusal names the records it dropped: the launch's others may have been committed
            # before its caller asked again (a launch is refused whole only while it is waited for).
            # A failed commit dropped them all (`Journal.sync_launch`).
            refused = getattr(exc, "subagent_ids", ())
            gone = [r for r in records if not refused or r.handle.subagent_id in refused]
            self._not_launched(gone)
            records = [r for r in records if r not in gone]
            if not records:
                return
        for record in records:
            # A close that stopped them meanwhile does not say why they end: they never started
            # because their caller gave up, and end as any abandoned launch does.
            record.closing = False
        await self._complete_now(records, lambda r: ChildOutcome("interrupted", "interrupted", None, LAUNCH_ABANDONED))

    def _not_launched(self, records: Sequence[Record]) -> None:
        for record in records:
            self._forget(record)
            self.tallies.not_launched(record)

    def _new_record(
        self, parent: AgentSession, parent_turn_id: str, spec: ChildSpec, correlation_id: str | None,
        keep_job: bool, inline: bool, route: ChildRoute | None = None,
    ) -> Record:
        """A launch's record, signed and planned, not yet held nor journaled (`submit` does both)."""
        host = self.host
        sid = new_id("sa-")
        pid = parent.session_id
        if route is not None and route.model is not None:
            model = route.model
        else:
            model = host.child_model(parent) if host.child_model else parent.model
        job = plan_job(host, parent, spec, subagent_id=sid, parent_turn_id=parent_turn_id, model=model, route=route,
                       delegates=self.engine.runs_here)
        created = host.clock.time()
        capability = sign(
            self.keyring, subagent_id=sid, parent_session_id=pid, correlation_id=correlation_id, created_at=created,
            role=job.role, depth=job.depth, provider=job.provider, model=job.model,
        )
        handle = SubagentHandle._build(
            CONTRACT_VERSION, sid, pid, correlation_id, created, job.provider, job.model, job.role, job.depth, capability
        )
        record = Record(handle, spec.goal, created, job)
        record.parent, record.model = parent, model
        if keep_job:
            # Until the engine holds the job (`placed`): a process stopped or killed before then leaves
            # the next start a launch to run, not a child to call interrupted.
            record.kept_job = json.dumps(job.to_dict(), separators=(",", ":"))
        if inline:
            record.inline = True
        return record

    # -- finishing -----------------------------------------------------------------------------

    async def _complete_now(self, records: Sequence[Record], outcome: Callable[[Record], ChildOutcome], *,
                            held: bool = False) -> None:
        """`finished` for children the service finishes itself, returning once they are published (while the
        service starts, once their ends are held: `release` publishes them). A caller cancelled meanwhile (its
        turn interrupted) leaves at once, and their end goes on: finishing, they are out of every stop's reach,
        and no engine holds them, so nothing else would end them. `close` waits for it, whether or not its
        caller does."""
        # Shielded here, which only children stopped before they ran pass, not in `finished`, which every
        # child passes: a launch pays for no future.
        # A withdrawn one in the context it was submitted in, not its stopper's (the host's `/agents stop`, in no
        # turn; a later turn's cancel): its hooks see the turn that launched it, as those of a child that ran do.
        loop = asyncio.get_running_loop()
        if held:  # marked completing already (`release`): `finished` would skip them
            ending = asyncio.gather(*(loop.create_task(self._finish(r, outcome(r)), context=r.context)
                                      for r in records))
        else:
            ending = asyncio.gather(*(loop.create_task(self.finished(r.handle.subagent_id, outcome(r)),
                                                       context=r.context) for r in records))
        # Settled by their end, or by the close once its grace is over, only their hooks running then: their
        # terminal rows journaled without waiting for them (`_give_up_hooks`), as a running child's are.
        settled = loop.create_future()
        self._endings[settled] = (ending, records)
        ending.add_done_callback(lambda done: self._ending_done(settled, done))
        # Counted from the start, not only once given up: finishing, they are out of the reach of `close`'s
        # stop, which would otherwise not wait for them, and close the journal before their terminal rows.
        self._wait_at_close(settled)
        try:
            await asyncio.shield(settled)
        except asyncio.CancelledError:
            if not settled.done():
                self._given_up.add(settled)
            raise
        if self._start_hold is not None:
            return
        await asyncio.gather(*(r.waiter(loop) for r in records))

    def _ending_done(self, settled: asyncio.Future, ending: asyncio.Future) -> None:
        """`_complete_now`'s end is over: it settles what its caller waits for, unless the close gave up on it."""
        self._endings.pop(settled, None)
        self._hooks_left.discard(ending)
        if not settled.done():
            if ending.cancelled():
                settled.cancel()
            elif (exc := ending.exception()) is not None:
                settled.set_exception(exc)
            else:
                settled.set_result(None)
        elif not ending.cancelled() and ending.exception() is not None:
            log.error("ending children whose hooks the close gave up on failed", exc_info=ending.exception())

    async def _publish(self) -> None:
        """Publish finished children once their terminal rows are committed: one commit wait
        for all of them, not one per child."""
        try:
            while self._unpublished:
                batch, self._unpublished = self._unpublished, []
                try:
                    await self.journal.sync()
                except JournalError as exc:
                    if exc.subagent_ids:
                        # A refusal: the journal dropped those records, and logged each, and keeps the
                        # rest. They are another launch's or a finished child's, not this batch's failure.
                        log.error("the journal refused %s (%s); the %d children finished meanwhile are published",
                                  ", ".join(exc.subagent_ids), exc.code, len(batch))
                    else:
                        self._unjournaled(batch)
                except Exception:
                    self._unjournaled(batch)
                finally:
                    for record, result in batch:
                        # Readable only now, once journaled: nobody sees a result a crash could take back.
                        record.result = result
                        record.state, record.updated_at = result.state, record.completed_at  # `set_state`, inline
                        self.tallies.finished(record, result)
                        self._forget(record)
                        record.wake()
        finally:
            self._publisher = None

    def _unjournaled(self, batch: Sequence[tuple[Record, SubagentResult]]) -> None:
        # The journal keeps the rows and retries them; waiters must not hang meanwhile.
        log.exception("journaling %d finished children failed; their results are readable anyway", len(batch))

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
        # The job stays: a finished child's snapshot shows its route and the task to run again.
        record.release()

    # -- reading -------------------------------------------------------------------------------

    def get(self, subagent_id: str) -> Record | SubagentResult | None:
        """The record of a live child, the result of a recently finished one, or None (look in
        the journal)."""
        return self._live.get(subagent_id) or self.tallies.result(subagent_id)

    def children(self, parent_session_id: str) -> list[Record]:
        """Children of a session not in a terminal state, in launch order."""
        siblings = self._by_parent.get(parent_session_id)
        return [r for r in siblings.values() if not r.state.terminal] if siblings else []

    def parents(self) -> list[str]:
        """The top-level sessions (not children) with children not in a terminal state, in the
        order of their earliest child still held."""
        return [pid for pid, siblings in self._by_parent.items()
                if any(r.handle.depth == 1 and not r.state.terminal for r in siblings.values())]

    def with_descendants(self, records: Iterable[Record]) -> list[Record]:
        """``records`` followed by their live children, theirs, and so on (a child's session id is
        its subagent id): what stopping them stops."""
        out = list(records)
        for record in out:  # grows while it is walked: breadth first, each level after the one above
            out.extend(self.children(record.handle.subagent_id))
        return out

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


def _terminal_state(outcome: ChildOutcome, current: SubagentState) -> SubagentState:
    if outcome.status == "completed":
        return S.SUCCEEDED
    if outcome.status == "interrupted":
        return S.CANCELLED if current is S.CANCEL_REQUESTED else S.INTERRUPTED
    return S.FAILED
