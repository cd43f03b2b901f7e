"""`InProcessEngine`: children as asyncio tasks on the service's own event loop."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Iterator, Mapping, Sequence

from agent import ToolTraceEntry
from lifecycle._child_run import ChildRun
from lifecycle._engine import EngineHost
from lifecycle._job import ChildJob
from lifecycle._liveness import Watch, monitor
from lifecycle._record import Record

log = logging.getLogger("lifecycle.engine")


class InProcessEngine:
    """Runs at most ``max_running`` children at once; the rest wait, taking turns by chat.

    Each top-level session (a chat) has a lane of waiting jobs, oldest first, and a free
    slot goes to the next lane in turn: a chat's batch of fifty children does not make
    another chat's single child wait behind all of them. A nested child waits in the lane
    of the chat it works for.

    Children die with the process: `survives_restart` is False, so the service
    interrupts them on close and marks those a crash left behind INTERRUPTED.
    One liveness monitor watches every running child (see `lifecycle._liveness`).

    An orchestrator child that waits for its own children lends them its slot
    (`lend_slot`) and takes one back before it goes on (`reclaim_slot`): were it to
    hold its slot while they queue for one, orchestrators filling every slot would
    wait for ever.

    A child gives its slot up as its end is reported, before the service's completion pipeline (its
    ``subagent_stop`` hooks) runs: a hook that launches a child and waits for it would otherwise wait,
    with every slot held by children in their hooks, for the hook timeout.
    """

    survives_restart = False
    runs_here = True

    def __init__(self, max_running: int) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running = max_running
        self._host: EngineHost | None = None
        self._lanes: dict[str, dict[str, tuple[ChildJob, contextvars.Context]]] = {}
        """Jobs waiting for a slot, by lane (the chat's session id), each oldest first, with the context they were
        submitted in; the lane served next is first (dicts: withdrawing a job and rotating a lane are O(1))."""
        self._waiting: dict[str, str] = {}
        """The lane of each waiting job."""
        self._nested: dict[str, str] = {}
        """The lane of each nested child holding a slot: its own children wait in it too."""
        self._runs: dict[str, ChildRun] = {}
        """Children holding a slot, until their task has reported their end (and those lending theirs)."""
        self._lending: set[str] = set()
        """Runs waiting for their own children, whose slots those children may take meanwhile."""
        self._ending: set[str] = set()
        """Runs whose end is reported, in the service's completion pipeline: they hold no slot any more."""
        self._reclaiming: dict[str, asyncio.Future] = {}
        """Lenders whose children are done, waiting for a slot back, oldest first: served before the queue."""
        self._monitor: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def running(self) -> int:
        """Children holding a slot (being built or running; not one whose end is being reported)."""
        return len(self._runs) - len(self._lending) - len(self._ending)

    @property
    def pending(self) -> int:
        """Jobs waiting for a slot."""
        return len(self._waiting)

    async def start(self, host: EngineHost, unfinished: Mapping[str, ChildJob | None]) -> Sequence[ChildJob]:
        self._host = host
        self._loop = asyncio.get_running_loop()
        self._monitor = asyncio.create_task(
            monitor(self._watches, lambda: host.delegation, host.clock), name="lifecycle-liveness"
        )
        return ()  # nothing outlives the process that ran it

    def submit(self, job: ChildJob) -> None:
        if self._closed or self._host is None:
            raise RuntimeError("the engine is not running")
        pid = job.parent_session_id
        parent = self._runs.get(pid)  # an orchestrator child of ours: its chat's lane
        lane = pid if parent is None else self._nested.get(pid, parent.job.parent_session_id)
        if len(self._runs) - len(self._lending) - len(self._ending) < self.max_running and not self._reclaiming:
            self._start(job, lane)  # `running`, inline
        else:
            self._waiting[job.subagent_id] = lane
            waiting = self._lanes.get(lane)
            if waiting is None:
                waiting = self._lanes[lane] = {}
            # Started later from another child's task: in this context, not that one's, it runs its hooks in the
            # turn that launched it (a `subagent_stop` hook of a queued child of one chat ran in another chat's turn).
            waiting[job.subagent_id] = (job, contextvars.copy_context())

    def withdraw(self, subagent_id: str) -> bool:
        return self.withdraw_in(subagent_id) is not None

    def withdraw_in(self, subagent_id: str) -> contextvars.Context | None:
        """`withdraw`, returning the context the job was submitted in (None: not waiting for a slot): the service
        ends the child there, its hooks in the turn that launched it, as they would have run in its task."""
        lane = self._waiting.pop(subagent_id, None)
        if lane is None:
            return None
        waiting = self._lanes[lane]
        _, context = waiting.pop(subagent_id)
        if not waiting:
            del self._lanes[lane]
        return context

    def interrupt(self, subagent_id: str, reason: str) -> None:
        run = self._runs.get(subagent_id)
        if run is not None:
            run.stop(reason)

    def lend_slot(self, subagent_id: str) -> bool:
        """A running child is about to wait for its own children: its slot may go to another
        job until it calls `reclaim_slot` (or `reclaim_slot_nowait`). False, changing nothing,
        when it holds no slot here (a top-level session, or one already lending)."""
        if subagent_id not in self._runs or subagent_id in self._lending:
            return False
        self._lending.add(subagent_id)
        self._fill()
        return True

    async def reclaim_slot(self, subagent_id: str) -> None:
        """Take a lent slot back, waiting (ahead of every queued job) until one is free. If the
        wait is cancelled, the child has its slot back all the same: it is winding down."""
        if subagent_id not in self._lending:
            return
        if self.running < self.max_running and not self._reclaiming:
            self._lending.discard(subagent_id)
            return
        waiter = self._reclaiming[subagent_id] = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            if self._reclaiming.pop(subagent_id, None) is not None:  # not granted: cancelled
                self._lending.discard(subagent_id)

    def reclaim_slot_nowait(self, subagent_id: str) -> None:
        """Take a lent slot back at once, even above ``max_running``: for a child that stops
        waiting because it was stopped, and only winds down."""
        self._lending.discard(subagent_id)

    def steer(self, subagent_id: str, text: str) -> bool:
        run = self._runs.get(subagent_id)
        if run is None or run.running_since is None:
            return False
        run.session.steer(text)
        return True

    def activity(self, subagent_id: str) -> str | None:
        if subagent_id in self._waiting:
            return "waiting for a slot"
        run = self._runs.get(subagent_id)
        if run is None:
            return None
        return "starting" if run.session is None else run.session.activity.description

    def tool_trace(self, subagent_id: str) -> tuple[ToolTraceEntry, ...] | None:
        run = self._runs.get(subagent_id)
        if run is None:
            return None
        return () if run.session is None else run.session.tool_log

    async def close(self, *, grace: float | None = None) -> None:
        # Nothing is sent anywhere, and the interrupted children's outcomes exist only here: they are waited
        # for, but with a grace at most that long. A child whose tool or model call ignores its cancellation
        # is left behind then, named: its row was never made terminal, so the next start ends it INTERRUPTED,
        # as after a crash, instead of the stop waiting for it for ever. One that had ended, and only its hooks
        # run on, is left behind too, its result journaled by the service's close.
        self._closed = True
        if self._monitor is not None:
            self._monitor.cancel()
            self._monitor = None
        runs = {run.task: run for run in self._runs.values() if run.task is not None}
        if not runs:
            return
        done, pending = await asyncio.wait(runs, timeout=grace)
        for task in done:
            if not task.cancelled():
                task.exception()  # taken: `ChildRun.run` logs its own failures
        for task in pending:
            sid = runs[task].job.subagent_id
            if self._in_end_hooks(sid):
                log.warning("child %s had ended, but its memory notification or subagent_stop hooks did not end within"
                            " %.0f s of the close: left behind, its result journaled by the close", sid, grace)
            else:
                log.error("child %s did not end within %.0f s of its stop (a tool or model call of it ignores "
                          "cancellation): left behind, the next start ends it as interrupted", sid, grace)

    def _in_end_hooks(self, subagent_id: str) -> bool:
        """Whether the child's end was reported and only its hooks run on: the service journals its result as it
        closes (`Stopping._journal_ends_in_hooks`), so the next start finds it ended, not interrupted."""
        find = getattr(self._host, "get", None)  # the service's `Supervisor`; not part of `EngineHost`
        record = None if find is None else find(subagent_id)
        return isinstance(record, Record) and record.completing and record.outcome is not None

    def _watches(self) -> Iterator[Watch]:
        for run in list(self._runs.values()):
            if run.running_since is not None:
                if run.watch is None:
                    run.watch = Watch(run.session, run.running_since, run.stop_for_timeout)
                yield run.watch

    def _start(self, job: ChildJob, lane: str, context: contextvars.Context | None = None) -> None:
        assert self._host is not None
        run = self._runs[job.subagent_id] = ChildRun(job, self._host)
        if lane != job.parent_session_id:
            self._nested[job.subagent_id] = lane
        # Named after the child (what a task left behind at shutdown is reported as); a name given also
        # spares asyncio formatting a "Task-<n>" one for every child.
        run.task = self._loop.create_task(run.run(self), name=job.subagent_id, context=context)

    def run_ended(self, run: ChildRun) -> None:
        """`Slots`: a child's end is about to be reported: its slot is free for the next, while the service
        finishes it."""
        sid = run.job.subagent_id
        self._ending.add(sid)
        self._lending.discard(sid)  # not counted off twice
        if self._lanes or self._reclaiming:
            self._fill()

    def run_done(self, run: ChildRun) -> None:
        """`Slots`: a child has reported its end. Its slot, unless given up already as its end was reported
        (`run_ended`), goes to a lender taking one back, else to the oldest queued job."""
        sid = run.job.subagent_id
        del self._runs[sid]
        self._lending.discard(sid)
        self._nested.pop(sid, None)
        if sid in self._ending:
            self._ending.discard(sid)  # its slot was given up already
        elif self._lanes or self._reclaiming:  # most often nothing waits for the slot
            self._fill()

    def _fill(self) -> None:
        while len(self._runs) - len(self._lending) - len(self._ending) < self.max_running and not self._closed:
            if self._reclaiming:
                sid = next(iter(self._reclaiming))
                waiter = self._reclaiming.pop(sid)
                self._lending.discard(sid)
                if not waiter.done():  # one cancelled meanwhile takes its slot back all the same
                    waiter.set_result(None)
            elif self._lanes:
                self._start_next()
            else:
                break

    def _start_next(self) -> None:
        """Start the oldest job of the lane whose turn it is; that lane's next turn comes after
        every other lane's."""
        lane = next(iter(self._lanes))
        waiting = self._lanes.pop(lane)
        sid = next(iter(waiting))
        job, context = waiting.pop(sid)
        del self._waiting[sid]
        if waiting:
            self._lanes[lane] = waiting
        self._start(job, lane, context)
