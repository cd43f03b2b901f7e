"""`TemporalEngine`: the gateway launches children as workflows on a task queue and follows them.

It never runs a child itself: `switchboard worker` processes do (`ChildWorker`). The
workflow id is the child's id, so a launch is idempotent and a handle re-attaches
without I/O; children keep running while the gateway is down (`survives_restart`),
and after a restart the engine follows the ones the journal holds as unfinished
again — those that finished meanwhile report their outcome at once. One it cannot follow
(Temporal refuses to show its workflow, or its input does not read here: a newer version wrote
it) is logged, left to the service, which marks it interrupted, and its workflow asked to stop
(`_let_go`); the others are followed all the same.

Per child, one task follows the workflow: one call starts it and sends it the
``running`` update (``starting``), which completes once a worker has built the child
and schedules its first model call (``running``; no polling while it waits for a
worker), then it waits for the result (``finished``). A child re-attached after a restart that a
worker had begun is reported running at once, since it began (`_found`); the others are sent the
update. `interrupt` is a Temporal cancellation request carrying the reason (cut to `STOP_REASON_CHARS`): a child
no worker has taken ends once Temporal holds the request (`_end_untaken`), as a queued in-process child ends at
once; one Temporal refuses (an API key without that right) is logged as a warning and said in the child's activity,
the child running on, and asked again by a later stop or the next start (the journal keeps the stop); `steer` is a
signal, sent again (in order, once) while Temporal does not answer, journaled until Temporal has taken it (as a
stop is when asked) so that the next start sends them (`steer_again`: once Temporal has the workflow, for a child
that start sends anew) if this process stops or is killed first;
one the client fails to send, Temporal's answer aside, or one Temporal refuses, is logged and given up, and the next
is sent;
while children are followed, the task queue's pollers are looked at (`_watch_workers`): every worker gone mid-run
is warned of once, and told at INFO when one polls again;
`activity` reads the workflow's pending activity, fetched in the background when the last look is older
than a second, and says when Temporal does not answer, until it does again (`_answering_again`), and how long
ago Temporal told it once that is over `ACTIVITY_STALE_SECONDS`; `refresh_activity` is that look, awaited by a
reader about to show it (`/agents`), which else read the last look, as old as the last time anyone asked.

Until Temporal is known to have a child's workflow (`EngineHost.placed`), the journal keeps
its job: `close` starts the workflows of the children it stops following before then, and
`start` starts those that a process killed, or one that could not reach Temporal, left without one
(the service hands it no job of a child asked to stop). A child asked to stop before its workflow's
start was sent, or while Temporal did not answer it and does not have the workflow, is never started.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType, PendingActivityState, TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, GetSystemInfoRequest
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from agent import CompactionPolicy
from lifecycle._engine import EngineHost
from lifecycle._job import PROCESS_EXIT, ChildJob, ChildOutcome
from lifecycle.settings import TemporalSettings
from lifecycle.temporal._wire import MODEL_CALL, RUNNING_UPDATE, STEER, WORKFLOW, ChildLimits

log = logging.getLogger("lifecycle.temporal")

_ACTIVITY_FRESH = 1.0
ACTIVITY_STALE_SECONDS = 10.0
"""A child's activity Temporal told this long ago or longer says how long ago (`activity`): its look is under way,
or Temporal did not answer it, and the child may be doing something else by now."""
_FIRST_EVENTS = 50
"""How many of a re-attached child's first history events are read, for its start and its first model call
(about the tenth event): one page, not the history a long child has (megabytes of conversation)."""
NO_WORKER_WARNING_SECONDS = 30.0
"""A child waiting this long for a worker to take it is worth a warning: with no worker on the task
queue, children wait for ever and nothing else says why."""
LONG_POLL_SECONDS = 70.0
"""How long a worker's poll may stay open with nothing to hand it: Temporal's matching.longPollExpirationInterval, a
minute by default, and never past the SDK's own 70 s deadline (measured: idle polls began every 54-57 s, 69 s with
the server's set longer). A live worker begins a poll of the task queue at least this often, a busy one too (it
polls for workflow tasks whether or not its call slots are full), so a poll older than this alone does not mean it
is gone; and a poll's time is when it began, so the warning comes 30 s or more after the last worker went (a lone
worker's restart is not taken for it)."""
WATCH_SECONDS = 5.0
"""How often the task queue's pollers are looked at while the gateway follows children: one request each time."""
_FOLLOW_AGAIN_FIRST, _FOLLOW_AGAIN_MAX = 0.5, 10.0
_UNREACHABLE = frozenset({RPCStatusCode.UNAVAILABLE, RPCStatusCode.UNKNOWN, RPCStatusCode.DEADLINE_EXCEEDED,
                          RPCStatusCode.RESOURCE_EXHAUSTED})
"""What Temporal answers while it is down, restarting or overloaded ("transport error" is UNKNOWN)."""
_SENDING = "temporal-request"
"""Tasks sending a cancellation, a signal or a workflow start, or a child's start or end to the host: `close` lets
them finish, the others it cancels."""
_FOLLOWING = "temporal-follow"
STOP_REASON_CHARS = 500
"""How much of a stop's reason is sent to Temporal (and is the child's error), as the service keeps of a cancel's:
a reason past the 4 MB a request may hold was refused as RESOURCE_EXHAUSTED, which reads as Temporal overloaded,
so the stop was asked again for ever and never reached the child; one past the 2 MB payload limit, taken, made
the child's interrupted outcome too big to record."""
CLOSE_GRACE_SECONDS = 10.0
"""How long `close` gives those tasks when its caller gives no grace: past it (Temporal does not answer), what
they were sending is left to the next start, which sends it again from the journal."""


@dataclass(slots=True)
class _Child:
    job: ChildJob
    handle: WorkflowHandle | None = None
    follow: asyncio.Task | None = None
    """The task following its workflow (`_follow`)."""
    placed: bool = False
    """Its workflow is known to exist (`EngineHost.placed` reported): a restart finds it there."""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    starting: bool = False
    """A start of its workflow is under way, unanswered: Temporal may have it, or have it yet."""
    running: bool = False
    stop_reason: str | None = None
    """The stop asked of it and not refused: a later stop is not asked again while one is under way."""
    refused: str | None = None
    """Why Temporal refused the last stop asked of it (it runs on), said with its activity until a stop goes in."""
    activity: str = "waiting for a worker"
    activity_at: float = 0.0
    """When Temporal last told its activity (the engine's clock); 0.0: never asked."""
    look: asyncio.Task | None = None
    """Asking Temporal for its activity (`_refresh`), under way: what `refresh_activity` waits for."""
    steers: deque[dict[str, str]] = field(default_factory=deque)
    """Steers Temporal has not taken yet, oldest first; the first is being sent. The journal holds them
    too (`EngineHost.unsent_steers`), kept up to date until Temporal has taken them all."""
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    """The context it was launched in (the parent turn's; the start's, for one re-attached), as its follow is: its
    stop's task runs in it too, and so do the hooks of its end, reported from there when no worker had taken it."""


@dataclass(slots=True)
class _Patience:
    """How one request waits for Temporal to answer again: from `_FOLLOW_AGAIN_FIRST` s between tries,
    doubling up to `_FOLLOW_AGAIN_MAX` s, with a warning each time it does not answer."""

    subagent_id: str
    address: str
    unanswered: Callable[[], None]
    """Told each time Temporal does not answer (`TemporalEngine._unanswered`)."""
    delay: float = _FOLLOW_AGAIN_FIRST

    async def waited(self, exc: BaseException, again: str) -> bool:
        """True, after the wait, when ``exc`` says Temporal does not answer, so the caller tries again;
        False at once for any other error. ``again`` says what is tried again, its ``%g`` the wait."""
        if not isinstance(exc, RPCError) or exc.status not in _UNREACHABLE:
            return False
        self.unanswered()
        log.warning("child %s: Temporal at %s does not answer (%s); %s",
                    self.subagent_id, self.address, exc, again % self.delay)
        await asyncio.sleep(self.delay)
        self.delay = min(2 * self.delay, _FOLLOW_AGAIN_MAX)
        return True


class TemporalEngine:
    """Runs children as `ChildWorkflow`s on ``settings.task_queue``; use from one event loop."""

    survives_restart = True
    runs_here = False  # on workers, which run no hooks: the children's spend comes in their outcomes

    def __init__(self, settings: TemporalSettings, *, compaction: CompactionPolicy | None = None,
                 client: Client | None = None, connect: Callable[[], Any] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        """Times how long no worker has polled (`_watch_workers`) and how old a child's activity is; a test moves its
        own on past the real minutes."""
        self.compaction = compaction
        self._client = client
        self._connect = connect
        self._host: EngineHost | None = None
        self._children: dict[str, _Child] = {}
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self._warned_no_worker = False
        """Warned that children wait for a worker, and no worker has taken one since."""
        self._watch: asyncio.Task | None = None
        """Looks at the task queue's pollers while children are followed (`_watch_workers`)."""
        self._workers_gone = False
        """The watch found no worker polling while children were followed, or the start's check none at all while
        the watch ran (`_check_workers`), and none has polled since."""
        self._newest_poll = 0.0
        """When the newest poll of the task queue the watch has seen began (Temporal's clock): one it saw before it
        last stopped, the pollers Temporal lists for minutes after a worker is gone, is not a worker polling again."""
        self._silent = False
        """Temporal did not answer a request, and has not answered one since (`_answering_again`): every child's
        activity says so. Else `/agents` read `waiting for a worker` for a child launched while Temporal was down,
        sending the operator to the workers."""

    @property
    def client(self) -> Client:
        assert self._client is not None, "start() first"
        return self._client

    async def start(self, host: EngineHost, unfinished: Mapping[str, ChildJob | None]) -> Sequence[ChildJob]:
        if self._client is None:
            if self._connect is not None:
                self._client = await self._connect()
            else:
                from lifecycle.temporal._connect import connect

                self._client = await connect(self.settings)
        # The three a worker says as it starts: one that takes none of these children differs in one of them,
        # seen at once rather than after one has waited NO_WORKER_WARNING_SECONDS for a worker.
        settings = self.settings
        log.info("children run on Temporal: task queue %s in namespace %s at %s; `switchboard worker` on the same "
                 "configuration runs them", settings.task_queue, settings.namespace, settings.address)
        self._host = host
        self._spawn(self._check_workers(), "temporal-describe")
        found = await asyncio.gather(*(self._reattach_or_let_go(sid, job) for sid, job in unfinished.items()))
        return [job for job in found if job is not None]

    def submit(self, job: ChildJob) -> None:
        if self._closed or self._host is None:
            raise RuntimeError("the engine is not running")
        child = self._children[job.subagent_id] = _Child(job)
        child.follow = self._spawn(self._follow(child, new=True), _FOLLOWING)
        self._watch_from_now()

    def withdraw(self, subagent_id: str) -> bool:
        return False  # once on the task queue, a child can only be cancelled

    def interrupt(self, subagent_id: str, reason: str) -> None:
        child = self._children.get(subagent_id)
        if child is None or child.stop_reason is not None:
            return
        if len(reason) > STOP_REASON_CHARS:
            reason = reason[:STOP_REASON_CHARS - 1] + "…"
        child.stop_reason = reason
        # Not in the stopper's context (the host's `/agents stop`, in no turn): `_end_untaken` reports its end there.
        self._spawn(self._cancel(child, reason), _SENDING, child.context.copy())

    def steer(self, subagent_id: str, text: str) -> bool:
        child = self._children.get(subagent_id)
        if child is None or not child.running or child.handle is None:
            return False
        self._queue_steers(child, [{"id": uuid.uuid4().hex, "text": text}])
        return True

    def steer_again(self, subagent_id: str, steers: Sequence[Mapping[str, str]]) -> None:
        child = self._children.get(subagent_id)
        if child is not None:  # else it ended while no process followed it, and reads no steer
            self._queue_steers(child, [{"id": s["id"], "text": s["text"]} for s in steers])

    def _queue_steers(self, child: _Child, steers: list[dict[str, str]]) -> None:
        sending = bool(child.steers)  # then the sender under way takes these after the ones before them
        child.steers.extend(steers)
        # Journaled before they are sent, not once a signal fails: the client retries a call for seconds
        # before it says Temporal does not answer, and a process killed meanwhile would lose a steer it
        # said was delivered. The journal forgets each once Temporal has taken it.
        self._keep_steers(child)
        if not sending and child.steers:
            self._spawn(self._send_steers(child), _SENDING)

    def _keep_steers(self, child: _Child) -> None:
        """Journal the steers Temporal has not taken (none: forget them there), so that a process killed
        before they are sent leaves them to the next start, as it does a stop."""
        if self._host is not None:
            self._host.unsent_steers(child.job.subagent_id, tuple(child.steers))

    def activity(self, subagent_id: str) -> str | None:
        child = self._children.get(subagent_id)
        if child is None:
            return None
        if child.running and child.look is None and self._clock() - child.activity_at > _ACTIVITY_FRESH:
            self._look(child)
        activity = child.activity
        if child.running and child.activity_at and (age := self._clock() - child.activity_at) >= ACTIVITY_STALE_SECONDS:
            activity = f"{activity} (as Temporal told it {_ago(age)} ago)"
        if self._silent:
            address = self.settings.address
            activity = f"{activity}; Temporal at {address} does not answer" if child.running else (
                f"waiting for Temporal at {address}, which does not answer")
        if child.refused is not None:  # where whoever asked for the stop looks (/agents, the model's list)
            return f"{activity}; Temporal refused to stop it ({child.refused})"
        return activity

    async def close(self, *, grace: float | None = None) -> None:
        """Stop following: the children go on running on the workers, and the next start
        re-attaches to them. First, within ``grace`` seconds (`CLOSE_GRACE_SECONDS` unless given: the
        gateway gives what is left of its shutdown's), the requests already made are
        sent, the workflows of children Temporal may not have yet are started (a child launched just before runs
        while the gateway is down) but for those asked to stop, and the starts and ends already being reported to
        the host are finished (their hooks run whole: the next start reports neither again, an end journaled here, a
        start it does not report at all); what Temporal has not taken by
        then, the next start sends, from the journal."""
        self._closed = True
        for task in list(self._tasks):
            if task.get_name() != _SENDING:
                task.cancel()
        if self._host is not None:
            for child in self._children.values():
                if child.placed:
                    continue
                if child.stop_reason is None:
                    self._spawn(self._place(child), _SENDING)
                elif not child.starting:
                    # Asked to stop before Temporal was known to have its workflow: not started here, as `_follow`
                    # does not (a worker could take it before the cancel). The cancel, which asks until a start
                    # still under way lands, ends on not finding the workflow when none is.
                    child.started.set()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_GRACE_SECONDS if grace is None else grace)
        for task in list(self._tasks):  # a request that could not be sent in time is given up here
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
        if self._host is not None:  # and left to the next start: a cancel is in the journal, steers go there
            for sid, child in self._children.items():
                self._host.unsent_steers(sid, tuple(child.steers))

    # -- following one child ----------------------------------------------------------------

    async def _follow(self, child: _Child, *, new: bool) -> None:
        host, sid = self._host, child.job.subagent_id
        assert host is not None
        patience = self._patience(sid)
        outcome = None
        if new and child.stop_reason is not None:
            # Asked to stop before its workflow's start was sent: never started, as a worker could take
            # it before the cancel and call the model. It ends as a child stopped before it ran.
            outcome = ChildOutcome("interrupted", "interrupted", None, child.stop_reason)
        while outcome is None:
            try:
                if new and child.stop_reason is not None and not await self._start_landed(child):
                    # Asked to stop while Temporal did not answer its start: the same, if the start did not
                    # land. Sent again, it would start a child that the cancel, waiting out the outage too,
                    # may reach only after a worker has built it and called the model.
                    outcome = ChildOutcome("interrupted", "interrupted", None, child.stop_reason)
                    break
                outcome = await self._outcome(child, new=new)
                break
            except asyncio.CancelledError:
                raise
            except WorkflowFailureError as exc:
                outcome = _failed_workflow(sid, exc, child.stop_reason)
                break
            except Exception as exc:
                if _cancelling():
                    # The SDK turns a cancelled call into an error of its own: this is `close` stopping
                    # the follow, and the child goes on on its worker; the next start re-attaches to it.
                    raise asyncio.CancelledError() from None
                # Temporal is down or restarting, for longer than the client retries one call: the
                # child's workflow is safe in its history and goes on once Temporal is back, so
                # follow it again then rather than report as lost a child that is not.
                if await patience.waited(exc, "following it again in %gs"):
                    new = child.handle is None  # its start again attaches to it, if it got that far
                    continue
                if child.placed and isinstance(exc, RPCError) and exc.status is RPCStatusCode.NOT_FOUND:
                    # Deleted (an operator's `temporal workflow delete`): ended as the next start ends a
                    # child it finds so, not FAILED now and INTERRUPTED had the gateway restarted first.
                    outcome = _gone(sid, child.stop_reason)
                    break
                log.error("child %s: %s", sid, exc)
                outcome = ChildOutcome("error", "error", None, f"the Temporal engine lost this child: {exc}")
                break
        child.started.set()
        if outcome.api_calls and not child.running:
            child.running = True  # it ran on a worker before we heard: say so before it ends
            host.running(sid)
        self._children.pop(sid, None)
        # Sending its end to the journal now: `close` gives this what it gives its requests. Cut off, the
        # completion pipeline (memory, `subagent_stop` hooks) would stop halfway, its terminal row never
        # put, and the next start, reading the outcome from Temporal again, would run it a second time.
        task = asyncio.current_task()
        if task is not None:
            task.set_name(_SENDING)
        await host.finished(sid, outcome)

    async def _outcome(self, child: _Child, *, new: bool) -> ChildOutcome:
        """Start the child's workflow (``new``) or attach to it, report it running, and return its outcome."""
        host, sid = self._host, child.job.subagent_id
        assert host is not None
        if new:
            # One call starts the workflow (or attaches to it: the id is the child's) and asks to
            # hear when a worker has built the child: no polling while it waits for a worker.
            start = WithStartWorkflowOperation(WORKFLOW, self._start_input(child), **self._start_options(sid))
            # The SDK hands the start's answer, or its error, to the operation too: read either, or
            # asyncio logs an error no one read (the cancel in `finally` reads one the call raised).
            answer = asyncio.ensure_future(start.workflow_handle())
            warning = asyncio.get_running_loop().call_later(NO_WORKER_WARNING_SECONDS, self._no_worker, sid)
            child.starting = True
            try:
                update = await self.client.start_update_with_start_workflow(
                    RUNNING_UPDATE, start_workflow_operation=start, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
                child.handle = await answer
                self._placed(child)
            except WorkflowAlreadyStartedError:
                # It ran, and ended, before this start (a start sent again after its answer was lost):
                # its outcome is the child's, and it is never run twice.
                child.handle = self.client.get_workflow_handle(sid)
                update = None
                self._placed(child)
            except WorkflowUpdateRPCTimeoutOrCancelledError:
                if _cancelling():
                    raise asyncio.CancelledError() from None
                # The call's deadline passed before a worker took the child: the workflow exists
                # (its id is the child's, so asking again starts nothing new); ask once more.
                child.handle = self.client.get_workflow_handle(sid)
                update = await self._running_update(child.handle)
            finally:
                child.starting = False
                warning.cancel()
                answer.cancel()
            self._warned_no_worker = False
            child.started.set()
            # `close` lets this finish, as it does the end's report: cut off, the `subagent_start` hooks would
            # stop halfway, and the next start, which reports the child running, would never run them again.
            # Then it stops following, as it stopped the others.
            follow = asyncio.current_task()
            if follow is not None:
                follow.set_name(_SENDING)
            try:
                await host.starting(sid)
            finally:
                if follow is not None:
                    follow.set_name(_FOLLOWING)
            if self._closed:
                raise asyncio.CancelledError()
        else:
            self._placed(child)  # re-attached: found on Temporal
            update = None if child.running else await self._running_update(child.handle)
        result = asyncio.ensure_future(child.handle.result())
        running = asyncio.ensure_future(update.result() if update is not None else asyncio.sleep(0, False))
        try:
            await asyncio.wait([result, running], return_when=asyncio.FIRST_COMPLETED)
            if running.done() and not running.cancelled() and running.exception() is None and running.result():
                child.running = True
                child.activity = "running"
                host.running(sid)
            return ChildOutcome.from_dict(await result)
        finally:
            result.cancel()
            running.cancel()

    async def _start_landed(self, child: _Child) -> bool:
        """Whether Temporal has the workflow of a child whose start it did not answer (the start, sent
        again, then attaches to it). Raises as the look-up does."""
        handle = self.client.get_workflow_handle(child.job.subagent_id)
        try:
            await handle.describe()
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True

    def _start_input(self, child: _Child) -> dict[str, Any]:
        """The workflow's input: the job and the limits of the settings it is started under."""
        assert self._host is not None
        limits = ChildLimits.from_settings(self._host.delegation, self.compaction)
        return {"job": child.job.to_dict(), "limits": limits.to_dict()}

    def _start_options(self, subagent_id: str) -> dict[str, Any]:
        # The id is the child's: a start while its workflow runs attaches to it, and one after it has
        # ended is refused (WorkflowAlreadyStartedError), never a second run of the child.
        return {"id": subagent_id, "task_queue": self.settings.task_queue,
                "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
                "id_reuse_policy": WorkflowIDReusePolicy.REJECT_DUPLICATE}

    def _placed(self, child: _Child) -> None:
        if not child.placed:
            child.placed = True
            if self._host is not None:
                self._host.placed(child.job.subagent_id)

    async def _place(self, child: _Child) -> None:
        """Start the child's workflow at `close`, which stopped its follow before Temporal was known
        to have it: without a worker, the follow's call returns only once one takes the child. This one
        returns at once, attaching to a workflow the follow's call did start."""
        sid = child.job.subagent_id
        patience = self._patience(sid)
        while True:
            try:
                await self.client.start_workflow(WORKFLOW, self._start_input(child), **self._start_options(sid))
            except WorkflowAlreadyStartedError:
                pass  # it ran, and ended, already
            except RPCError as exc:
                if await patience.waited(exc, "starting its workflow again in %gs"):
                    continue
                log.error("child %s: its workflow could not be started (%s); the next start tries again", sid, exc)
                return
            self._placed(child)
            # Steers waiting for the workflow (`_send_steers`) are sent within the close's grace, not left to it.
            child.handle = child.handle or self.client.get_workflow_handle(sid)
            child.started.set()
            return

    def _no_worker(self, subagent_id: str) -> None:
        if not self._warned_no_worker:  # once, not for each child of a fan-out, until a worker takes one
            self._warned_no_worker = True
            log.warning("child %s has waited %g s for a worker on Temporal task queue %r in namespace %r (at %s):"
                        " is a `switchboard worker` running for it?", subagent_id, NO_WORKER_WARNING_SECONDS,
                        self.settings.task_queue, self.settings.namespace, self.settings.address)

    async def _check_workers(self) -> None:
        """Warn, `NO_WORKER_WARNING_SECONDS` after the start, when no worker has polled the task queue: a
        task_queue or namespace that differs from the workers' was told only once a child had waited that long
        (at the first delegation, perhaps hours later), and not as the setting to fix. Not at once: workers
        started beside the gateway (compose, systemd) come up a few seconds after it."""
        await asyncio.sleep(NO_WORKER_WARNING_SECONDS)
        settings = self.settings
        queue = TaskQueue(name=settings.task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL)
        request = DescribeTaskQueueRequest(namespace=settings.namespace, task_queue=queue,
                                           task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
        try:
            pollers = (await self.client.workflow_service.describe_task_queue(request)).pollers
        except RPCError as exc:  # not answering, or a key without that right: the children's own warnings remain
            log.debug("describe task queue %s: %s", settings.task_queue, exc)
            return
        if pollers or self._warned_no_worker:  # a child that waited for one said it already
            return
        if self._watch is not None:
            # Children re-attached are watched (`_watch_workers`): it said this again a long poll later, and a child
            # waiting for a worker did. Taken as gone, the watch tells when one polls, and warns should all go again.
            # With no watch, nothing would see a worker come and go before a child, hours later, waits for one.
            self._warned_no_worker = self._workers_gone = True
        log.warning("lifecycle.temporal.task_queue: no `switchboard worker` polls task queue %r in namespace %r at %s"
                    " (%g s after this gateway started); its children wait until one does: start one, or give the"
                    " workers this task_queue and namespace", settings.task_queue, settings.namespace,
                    settings.address, NO_WORKER_WARNING_SECONDS)

    def _watch_from_now(self) -> None:
        if self._watch is None and not self._closed:
            self._watch = self._spawn(self._watch_workers(), "temporal-describe")

    async def _watch_workers(self) -> None:
        """While children are followed, warn once when no worker has polled the task queue for
        `NO_WORKER_WARNING_SECONDS` past a long poll (every worker stopped or crashed while children run: their
        calls, handed back, wait for ever, and nothing else said why), and say once when one polls again.

        A poll is seen as the newest time a poll began going forward, timed on this process's clock (the server's
        may differ from it): a worker waiting for work begins one each `LONG_POLL_SECONDS`, so none seen for that
        long and `NO_WORKER_WARNING_SECONDS` more means none polls. Not while no child is followed: workers may be
        stopped on purpose while there is nothing to run (the start's own check, `_check_workers`, tells a task
        queue that no worker polls at all)."""
        settings = self.settings
        queue = TaskQueue(name=settings.task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL)
        request = DescribeTaskQueueRequest(namespace=settings.namespace, task_queue=queue,
                                           task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
        seen = self._clock()
        try:
            while self._children and not self._closed:
                try:
                    pollers = (await self.client.workflow_service.describe_task_queue(request)).pollers
                except RPCError as exc:  # Temporal down: said by the children's requests, not here
                    log.debug("describe task queue %s: %s", settings.task_queue, exc)
                    # No worker polls a Temporal that does not answer: counted from its answer, those back with it
                    # are not warned of as gone while they connect again.
                    pollers, seen = None, self._clock()
                if pollers is not None:
                    began = max((p.last_access_time.ToNanoseconds() / 1e9 for p in pollers), default=0.0)
                    if began > self._newest_poll:
                        self._newest_poll, seen = began, self._clock()
                        if self._workers_gone:
                            # Else the next time they all go quiet stays unsaid until a worker takes a new child,
                            # which the calls of running children handed back never ask for.
                            self._workers_gone = self._warned_no_worker = False
                            log.info("lifecycle.temporal.task_queue: a `switchboard worker` polls task queue %r in"
                                     " namespace %r at %s again; the children waiting for one go on",
                                     settings.task_queue, settings.namespace, settings.address)
                    elif not self._workers_gone:
                        quiet = self._clock() - seen
                        if quiet >= LONG_POLL_SECONDS + NO_WORKER_WARNING_SECONDS:
                            self._workers_gone = True
                            self._no_poll(quiet)
                await asyncio.sleep(WATCH_SECONDS)
        finally:
            self._watch = None

    def _no_poll(self, quiet: float) -> None:
        if self._warned_no_worker:  # a child that waited for one said it already
            return
        self._warned_no_worker = True
        settings = self.settings
        log.warning("lifecycle.temporal.task_queue: no `switchboard worker` polls task queue %r in namespace %r at %s"
                    " (none has for %.0f s, while %d child(ren) wait or run there); its children wait until one does:"
                    " start one, or give the workers this task_queue and namespace", settings.task_queue,
                    settings.namespace, settings.address, quiet, len(self._children))

    async def _running_update(self, handle: WorkflowHandle) -> Any:
        """The ``running`` update of a child re-attached after a restart; None once its workflow
        has ended (its result says how). Asked again while Temporal does not answer: given up, the child
        stayed PENDING, `waiting for a worker`, its steers refused as to a child not running, until it ended."""
        patience = self._patience(handle.id)
        # As for a launch: children re-attached while no worker runs would otherwise wait with no word of why.
        warning = asyncio.get_running_loop().call_later(NO_WORKER_WARNING_SECONDS, self._no_worker, handle.id)
        try:
            return await self._ask_running(handle, patience)
        finally:
            warning.cancel()

    async def _ask_running(self, handle: WorkflowHandle, patience: _Patience) -> Any:
        while True:
            try:
                if (await handle.describe()).status is not WorkflowExecutionStatus.RUNNING:
                    return None
                update = await handle.start_update(RUNNING_UPDATE, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
                self._warned_no_worker = False
                return update
            except Exception as exc:  # it ended meanwhile: an ended workflow refuses updates
                if _cancelling():
                    # `close` stopping the follow while the child waits for a worker: the SDK says so in an error
                    # of its own, which, taken for an ended workflow, would keep the follow on to the end of the grace.
                    raise asyncio.CancelledError() from None
                if await patience.waited(exc, "asking again in %gs whether a worker has taken it"):
                    continue
                log.debug("no running update for %s: %s", handle.id, exc)
                return None

    async def _reattach_or_let_go(self, subagent_id: str, job: ChildJob | None) -> ChildJob | None:
        """`_reattach`, or None for a child it fails on however it fails (a workflow input this version cannot
        read: a newer one wrote it): one such child must not fail the start, and with it the gateway's, nor
        keep every other child from being followed. The service marks it interrupted, as it does one whose
        workflow Temporal refuses to show, and its workflow is asked to stop (`_let_go`)."""
        try:
            return await self._reattach(subagent_id, job)
        except Exception as exc:
            self._children.pop(subagent_id, None)
            log.error("cannot re-attach to child %s: %s: %s", subagent_id, type(exc).__name__, exc)
            self._let_go(subagent_id)
            return None

    async def _reattach(self, subagent_id: str, job: ChildJob | None) -> ChildJob | None:
        """Follow the child again, or, when Temporal has no workflow for it and the journal kept its
        ``job``, start it: its process stopped, or was killed, before the start reached Temporal."""
        handle = self.client.get_workflow_handle(subagent_id)
        patience = self._patience(subagent_id)
        while True:
            try:
                wire, began = await self._found(handle)
                break
            except RPCError as exc:
                # Given up now, the child would be reported interrupted while it runs on its worker.
                if await patience.waited(exc, "re-attaching in %gs"):
                    continue
                if exc.status is not RPCStatusCode.NOT_FOUND:
                    log.error("cannot re-attach to child %s: %s", subagent_id, exc)
                    self._let_go(subagent_id)
                elif job is not None:
                    log.info("child %s was launched but its workflow never started; starting it now", subagent_id)
                    child = self._children[subagent_id] = _Child(job)
                    child.follow = self._spawn(self._follow(child, new=True), _FOLLOWING)
                    self._watch_from_now()
                    return job
                return None
        if wire is None:
            return None
        job = ChildJob.from_dict(wire["job"])
        child = self._children[subagent_id] = _Child(job, handle)
        child.started.set()
        if began is not None:
            # Running on its worker: said at once, since it began, and not asked of the worker (the
            # `running` update), which would leave it PENDING, waiting for a worker, until one answers.
            assert self._host is not None
            child.running, child.activity = True, "running"
            self._host.running(subagent_id, started_at=began)
        child.follow = self._spawn(self._follow(child, new=False), _FOLLOWING)
        self._watch_from_now()
        return job

    async def _found(self, handle: WorkflowHandle) -> tuple[dict[str, Any] | None, float | None]:
        """The input the child's workflow was started with (None if its history has no start) and when
        a worker began running the child (None if none has yet), read from the first events of its
        history: the start of a run continued as new carries it, and a first run schedules its first model
        call within a few events of its start (a child so far past them that it has not runs on and is
        reported running once its `running` update answers)."""
        await handle.describe()
        wire = None
        seen = 0
        async for event in handle.fetch_history_events(page_size=_FIRST_EVENTS):
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                payloads = event.workflow_execution_started_event_attributes.input.payloads
                (wire,) = await self.client.data_converter.decode(payloads, [dict])
                began = ((wire or {}).get("resume") or {}).get("running_since")
                if began:
                    return wire, float(began)
            elif (event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                  and event.activity_task_scheduled_event_attributes.activity_type.name == MODEL_CALL):
                return wire, event.event_time.seconds + event.event_time.nanos / 1e9
            seen += 1
            if seen >= _FIRST_EVENTS:
                break
        return wire, None

    # -- requests ---------------------------------------------------------------------------

    async def _cancel(self, child: _Child, reason: str) -> None:
        # Sent to the workflow as soon as it exists, not once a worker has taken it: while no worker
        # runs, the request must already be in Temporal's history, or a gateway restart loses it
        # and the child runs in full when a worker comes.
        sid = child.job.subagent_id
        patience = self._patience(sid)
        while True:
            handle = child.handle or self.client.get_workflow_handle(sid)
            try:
                await handle.cancel(reason=reason)
                child.refused = None
                break
            except RPCError as exc:
                # Temporal is down or restarting: dropped now, the stop would never reach the child,
                # which runs to its end once Temporal is back. Ask again until it answers.
                if await patience.waited(exc, "asking again in %gs to stop it"):
                    continue
                if exc.status is not RPCStatusCode.NOT_FOUND:
                    # Refused (an API key without that right, a request Temporal finds invalid): the child runs
                    # on, which the user who asked to stop it must be able to read somewhere: here, and in its
                    # activity. Kept as asked, the stop made every later one a no-op: a second /stop (the right
                    # granted meanwhile) was never sent, and only the next start asked again.
                    log.warning("child %s: Temporal refused to stop it (%s: %s); it runs on, and the next start"
                                " asks again", sid, exc.status.name, exc)
                    child.stop_reason, child.refused = None, exc.status.name
                    return
                if child.started.is_set():
                    log.debug("cancel of %s: %s", sid, exc)  # it finished meanwhile: the outcome says how
                    return
            # Its start has not reached Temporal yet: ask again shortly, or as soon as it has.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.started.wait(), 0.2)
        await self._end_untaken(child, handle, patience)

    def _let_go(self, subagent_id: str) -> None:
        """Ask Temporal to stop the workflow of a child `start` cannot follow. The service marks it interrupted
        by process exit (which ``lifecycle.on_restart: resume`` runs again) and no process reads its result:
        left to run on, it would spend for no one, its work perhaps done twice."""
        self._spawn(self._stop_unfollowed(subagent_id), _SENDING)

    async def _stop_unfollowed(self, subagent_id: str) -> None:
        handle = self.client.get_workflow_handle(subagent_id)
        patience = self._patience(subagent_id)
        while True:
            try:
                await handle.cancel(reason=PROCESS_EXIT)
                return
            except RPCError as exc:
                if await patience.waited(exc, "asking again in %gs to stop it"):
                    continue
                if exc.status is not RPCStatusCode.NOT_FOUND:  # else it is gone
                    log.warning("child %s: Temporal refused to stop its workflow (%s: %s), which runs on followed by"
                                " no process", subagent_id, exc.status.name, exc)
                return

    async def _end_untaken(self, child: _Child, handle: WorkflowHandle, patience: _Patience) -> None:
        """End a child no worker has taken, now that Temporal holds its cancellation request: a worker
        that takes it later reads the request with the workflow's first task and never builds it
        (`ChildWorkflow.run`), so it ends at once, as a queued in-process child does, instead of when a
        worker comes. One a worker has begun ends as its workflow says, reported by its follow."""
        sid = child.job.subagent_id
        if child.running:
            return
        while True:
            try:
                # Read once the request is in: a worker that begins the workflow from now on reads it too.
                taken = await _taken(handle)
                break
            except RPCError as exc:
                if not await patience.waited(exc, "asking again in %gs whether a worker has taken it"):
                    log.debug("history of %s: %s", sid, exc)  # its workflow says how it ended, once a worker takes it
                    return
        host = self._host
        # Not once closing: the next start asks again, from the journal, and ends it then.
        if taken or host is None or self._closed or child.running or self._children.get(sid) is not child:
            return
        del self._children[sid]
        if child.follow is not None:
            child.follow.cancel()
        child.started.set()
        await host.finished(sid, ChildOutcome("interrupted", "interrupted", None, child.stop_reason))

    async def _send_steers(self, child: _Child) -> None:
        # One sender per child, so that a steer never overtakes an earlier one Temporal has not taken.
        sid = child.job.subagent_id
        patience = self._patience(sid)
        if child.handle is None:
            # Handed back at a restart (`steer_again`) to a child whose workflow this start sends anew: signalled
            # now, they failed on the missing handle and were lost. Sent once Temporal has the workflow (the
            # follow sets `started` then, or when the child ended without one, which reads no steer).
            await child.started.wait()
        while child.steers:
            if child.handle is None:
                log.warning("child %s ended before its workflow started; %d steer(s) are not read",
                            sid, len(child.steers))
                child.steers.clear()
                self._keep_steers(child)
                return
            try:
                await child.handle.signal(STEER, child.steers[0])
            except RPCError as exc:
                # Temporal is down or restarting: dropped now, the text would never reach the child.
                # The signal may have landed though its answer did not: the workflow reads a request
                # id once, so sending it again never doubles it.
                if await patience.waited(exc, "steering it again in %gs"):
                    continue
                if exc.status is RPCStatusCode.NOT_FOUND:
                    # It ended meanwhile, as an in-process child that ends before its next step reads no steer.
                    log.warning("child %s ended before %d steer(s) reached it; they are not read (%s)",
                                sid, len(child.steers), exc)
                    child.steers.clear()
                    self._keep_steers(child)
                    return
                # Refused (an API key without the right to signal, a request Temporal finds invalid): said as
                # the child having ended, with the steers after it dropped unsent, the log blamed the child.
                log.warning("child %s: Temporal refused a steer (%s: %s); it is not read", sid, exc.status.name, exc)
            except Exception as exc:
                if _cancelling():
                    raise asyncio.CancelledError() from None
                # Not Temporal's answer but the client's (a payload its codec refuses): sent again, the steer
                # would fail again, and every later one wait behind it for good. Given up, as the steers of a
                # child that ended are; the next goes on.
                log.error("child %s: a steer could not be sent (%s: %s); it is not read", sid, type(exc).__name__, exc)
            child.steers.popleft()
            self._keep_steers(child)  # taken by Temporal, or given up: the journal keeps only the ones still to send

    async def refresh_activity(self, subagent_ids: Sequence[str], *, timeout: float) -> None:
        """Ask Temporal what these children do, those last told over a second ago, and wait for its answers at most
        ``timeout`` seconds: for a reader about to show it (`/agents`). `activity` alone answers at once with the
        last look, however old, asking in the background. One not answered in time is still asked, its `activity`
        saying how old it is."""
        if self._closed:
            return
        looks = set()
        for sid in subagent_ids:
            child = self._children.get(sid)
            if child is None or not child.running:
                continue
            if child.look is not None:
                looks.add(child.look)
            elif self._clock() - child.activity_at > _ACTIVITY_FRESH:
                looks.add(self._look(child))
        if looks:
            await asyncio.wait(looks, timeout=timeout)  # the late ones are not cancelled: they land for the next read

    def _look(self, child: _Child) -> asyncio.Task:
        child.look = self._spawn(self._refresh(child), "temporal-describe")
        return child.look

    async def _refresh(self, child: _Child) -> None:
        try:
            self._note_activity(child, await child.handle.describe())
        except RPCError:
            pass
        finally:
            child.look = None

    def _note_activity(self, child: _Child, desc: Any) -> None:
        child.activity_at = self._clock()
        pending = desc.raw_description.pending_activities
        if not pending:
            child.activity = "thinking" if child.running else child.activity
            return
        current = pending[-1]
        label = current.activity_id.split("-", 1)[-1]
        tool = label.removeprefix("tool-")
        if current.attempt > 1 and current.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED:
            # Only a lost worker's call is retried (`_RETRY`), and none has taken it again: said as another worker
            # running it, a child whose every worker was gone read as at work for as long as none came.
            again = "call the model" if label == "model" else f"run {tool}"
            child.activity = f"waiting for a worker to {again} again (attempt {current.attempt}: its worker was lost)"
            return
        what = "waiting for the model" if label == "model" else f"running {tool}"
        child.activity = what if current.attempt <= 1 else f"{what} (attempt {current.attempt}, another worker)"

    def _patience(self, subagent_id: str) -> _Patience:
        return _Patience(subagent_id, self.settings.address, self._unanswered)

    def _unanswered(self) -> None:
        if not self._silent and not self._closed:
            self._silent = True
            self._spawn(self._answering_again(), "temporal-describe")

    async def _answering_again(self) -> None:
        """Ask Temporal, as the requests waiting for it do, until it answers: then the children's activity no
        longer says it does not. One try each time (an answer comes at once while it is down)."""
        delay = _FOLLOW_AGAIN_FIRST
        while True:
            await asyncio.sleep(delay)
            try:
                await self.client.workflow_service.get_system_info(GetSystemInfoRequest())
                break
            except RPCError as exc:
                if exc.status not in _UNREACHABLE:  # a refusal is an answer too
                    break
            delay = min(2 * delay, _FOLLOW_AGAIN_MAX)
        self._silent = False

    def _spawn(self, coro: Any, name: str, context: contextvars.Context | None = None) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name, context=context)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


async def _taken(handle: WorkflowHandle) -> bool:
    """Whether a worker has begun a task of the workflow's current run (Temporal writes the start of a
    task as the worker takes it), or the run continues one that ran (continued as new)."""
    async for event in handle.fetch_history_events(page_size=_FIRST_EVENTS):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            return True
        if (event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
                and event.workflow_execution_started_event_attributes.continued_execution_run_id):
            return True
    return False


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


_DELETED = "Delete workflow execution"
"""The reason Temporal terminates a running workflow with as an operator deletes it; the follow may read
that end before the workflow is gone (then it reads NOT_FOUND)."""


def _failed_workflow(subagent_id: str, exc: WorkflowFailureError, stop_reason: str | None) -> ChildOutcome:
    """A workflow that ended without an outcome: cancelled before it ran, deleted or terminated by an
    operator, or timed out by a namespace limit."""
    cause = exc.cause
    name = type(cause).__name__
    if name == "CancelledError":
        return ChildOutcome("interrupted", "interrupted", None, stop_reason or "cancelled")
    if name == "TerminatedError" and getattr(cause, "message", None) == _DELETED:
        return _gone(subagent_id, stop_reason)
    return ChildOutcome("error", "error", None, f"the child's workflow ended without a result ({name}: {cause})")


def _gone(subagent_id: str, stop_reason: str | None) -> ChildOutcome:
    """A child whose workflow Temporal no longer has (deleted), found so while the gateway follows it: ended
    as a start that finds it gone ends it (the service marks it so: `_left_unfinished`), `INTERRUPTED` with
    the reason of a stop asked of it first, or by process exit, which ``lifecycle.on_restart: resume`` reads
    as lost. Said FAILED here, the same child ended two ways, by whether the gateway restarted in between."""
    log.warning("child %s: its workflow is gone from Temporal (deleted); it ends interrupted", subagent_id)
    return ChildOutcome("interrupted", "interrupted", None, stop_reason or PROCESS_EXIT)


def _ago(seconds: float) -> str:
    """``42 s``, ``3 min``, ``2 h``: how long ago a child's activity was told, to the unit that reads at a glance."""
    if seconds < 60:
        return f"{int(seconds)} s"
    return f"{int(seconds // 60)} min" if seconds < 3600 else f"{int(seconds // 3600)} h"
