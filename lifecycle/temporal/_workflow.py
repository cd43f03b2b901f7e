"""`ChildWorkflow`: one child as one Temporal workflow, its model and tool calls as activities.

The workflow runs the same agent loop as the in-process engine (`AgentSession`
driven by `ChildRun`), with a model and tools that are activity calls: its
conversation is the workflow's state, rebuilt from history by replay when another
worker takes over. It runs unsandboxed (the sandbox re-imports modules per run,
which costs more than a short child does), so the code here must stay
deterministic: time is workflow time, turn ids are derived from the child's id,
and nothing reads files or the network outside an activity.

Liveness maps onto activity timeouts. A model call (with its retries on other
workers) has ``stale_between_turns_seconds`` (or the idle cap, if lower) from
scheduling to close; a tool call ``stale_in_tool_seconds``; when the limit fires
the child stops as in-process, with the same `Timeout` words. Heartbeats
(three missed ones) tell a dead worker from a slow call. A cancellation request
(``WorkflowHandle.cancel(reason=...)``) stops the child at its next safe boundary;
the workflow then completes with the interrupted outcome and its partial output. One
that a worker reads with the workflow's first task (the child was stopped while no worker
had taken it) ends it there, never built.

Every model call carries the whole conversation, so a long child's history grows with
the square of its length, towards Temporal's limits (50 MB or 51,200 events), past which
the child would fail. Before a model call, once the history is past a bound, the workflow
continues as new, carrying the child's state (the saved turn, usage, counters, unread
steers, steer ids): the child's id, its result, stops and steers work across the switch.
Between the tool calls of one answer it cannot: near the limit, the rest of them are not
run (`HISTORY_FULL`), and the switch comes before the next model call.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, TimeoutError, TimeoutType
from temporalio.exceptions import CancelledError as TemporalCancelled
from temporalio.workflow import ActivityCancellationType

from agent import AgentSession, CompactionPolicy, Compactor, ModelError, ModelRequest, ModelResponse, Tool, ToolError
from lifecycle._child_run import ChildRun
from lifecycle._job import ChildJob, ChildOutcome
from lifecycle._liveness import WARNING_FRACTION, budget_warning, make_timeout
from lifecycle.temporal._wire import (
    ACTIVITY_QUERY,
    MODEL_CALL,
    MODEL_ERROR,
    PAYLOAD_LIMIT_BYTES,
    PREPARE,
    RUNNING_UPDATE,
    SETUP_ERROR,
    STEER,
    TOOL_CALL,
    WORKFLOW,
    ChildLimits,
    ConversationSize,
    oversize,
    request_to_wire,
    response_from_wire,
)

_RETRY = RetryPolicy(initial_interval=timedelta(seconds=0.5), backoff_coefficient=2.0,
                     maximum_interval=timedelta(seconds=5), non_retryable_error_types=[MODEL_ERROR, SETUP_ERROR])
"""Only a lost worker (a heartbeat timeout) or a worker shutting down is retried: failures
the call itself reports are final."""

# Test-only knobs, not settings: tests lower them to make a child continue as new within a few
# calls. Past either bound (or when Temporal suggests it) the workflow continues as new before its
# next model call. Each is a fifth of Temporal's hard limit.
_CONTINUE_AFTER_EVENTS = 10_240
_CONTINUE_AFTER_BYTES = 10 * 2**20
# A run cannot continue as new between the tool calls of one model answer, and the up to 64 of them
# (`MAX_CALLS_PER_ANSWER`), each result up to a payload of 2 MB, would pass Temporal's 50 MB, which
# terminates the workflow, the child lost with all it had done. Past these bounds (test-only knobs too)
# a tool call is not started (the model reads `HISTORY_FULL` and calls it again after the switch), and
# a model call that could not switch runs is refused, the child ending with that error. Room is kept
# for the tool call last let in (its arguments and result, a payload each) and what ends the run (its
# outcome or the state it carries, another).
_FULL_AFTER_EVENTS = 51_200 - 1_024
_FULL_AFTER_BYTES = 50 * 2**20 - 3 * PAYLOAD_LIMIT_BYTES
_NO_EMPTY_RUNS = "no-continue-before-a-runs-first-call"
"""Patch id: a run continues as new only once it has made a call. A history written before replays as it ran."""
_HISTORY_BOUND = "no-call-past-the-history-bound"
"""Patch id: a call refused past `_FULL_AFTER_BYTES`. A history written before (which scheduled it) replays
as it ran."""

HISTORY_FULL = ("not run: this child's Temporal history is near its size limit; it continues as new before its"
                " next model call, after which this call can be made again (docs/scale-out.md)")
"""A tool call's result, as the model reads it, when `_FULL_AFTER_BYTES` or `_FULL_AFTER_EVENTS` is past."""

_STOPPED_UNBUILT = "stopped-before-taken-is-never-built"
"""Patch id: a run that reads a stop with its first task ends before PREPARE. A history written before
it (PREPARE ran first) replays as it ran; a new run records the patch as it takes the new path."""


class _WorkflowClock:
    """Workflow time: the same on every replay. Outside the workflow's loop — while a worker
    evicts the workflow from its cache and `finally` blocks of the agent loop still run —
    it reads 0 instead of raising, so the eviction stays quiet."""

    def time(self) -> float:
        return workflow.time() if workflow.in_workflow() else 0.0

    def monotonic(self) -> float:
        return self.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Host:
    """The part of an `EngineHost` a `ChildRun` reads while it executes."""

    clock = _WorkflowClock()


class _ActivityModel:
    """The child's model: every completion is a model-call activity on some worker."""

    def __init__(self, flow: ChildWorkflow, traits: Mapping[str, Any]) -> None:
        self._flow = flow
        self.name = traits.get("name") or "unknown"
        self.context_window = int(traits.get("context_window") or 128_000)
        self.supports_vision = bool(traits.get("supports_vision"))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._flow.call_model(request)


@workflow.defn(name=WORKFLOW, sandboxed=False)
class ChildWorkflow:
    @workflow.init
    def __init__(self, wire: dict[str, Any]) -> None:
        self._job: ChildJob | None = None
        self._wire_job = wire.get("job")
        """The job as the gateway sent it, for the input of a run continued as new."""
        self._limits = ChildLimits()
        self._run: ChildRun | None = None
        self._setup: asyncio.Task | None = None
        self._stop_reason: str | None = None
        self._steered: list[str] = []
        # What a run continued as new carries, restored before any signal or update of the new run is handled.
        self._resume: dict[str, Any] | None = wire.get("resume")
        carried = self._resume or {}
        self._steer_ids: set[str] = set(carried.get("steer_ids") or ())
        self._calls = carried.get("calls", 0)
        self._run_calls = 0
        """Calls this run has made (`_calls` counts those of the runs before it too)."""
        self._running_since = carried.get("running_since", 0.0)
        self._prepared: dict[str, Any] = {}
        self._sized = ConversationSize()
        self._slim: dict[str, Any] = {}
        self._ended = False

    @workflow.run
    async def run(self, wire: dict[str, Any]) -> dict[str, Any]:
        """The child's `ChildOutcome` as a dict; never fails for the child's own failures."""
        try:
            job = self._job = ChildJob.from_dict(wire["job"])
        except (KeyError, TypeError, ValueError) as exc:
            # Raised, it would fail every workflow task for ever and the child wait with no word of why.
            self._ended = True
            return ChildOutcome("failed", "error", None, (
                f"this worker cannot read the child's job ({exc}): a gateway newer than its workers sends what"
                " they do not know; run the gateway and its workers on one version (docs/scale-out.md)")).to_dict()
        self._limits = ChildLimits.from_dict(wire.get("limits") or {})
        # What a tool call needs of the child, without the goal and context each call would repeat.
        self._slim = {**job.to_dict(), "goal": "", "context": None, "output_schema": None, "images": []}
        stopped = workflow.cancellation_reason()
        if stopped is not None and self._resume is None and workflow.patched(_STOPPED_UNBUILT):
            # Stopped before any worker took it: never built, as an in-process child stopped while it
            # waits for a slot (the gateway may have ended it so already). A run continued as new ends
            # in `_child` instead, with what it had.
            self._ended = True
            return ChildOutcome("interrupted", "interrupted", None, stopped or "cancelled").to_dict()
        body = asyncio.ensure_future(self._child(job))
        while True:
            try:
                outcome = await asyncio.shield(body)
                self._ended = True
                return _fitting(outcome)
            except asyncio.CancelledError:
                if body.done():
                    raise
                self._stop(workflow.cancellation_reason() or "cancelled")

    @workflow.signal(name=STEER)
    def steer(self, request: dict[str, str]) -> None:
        """Deliver ``request["text"]`` at the child's next iteration boundary (kept until it runs),
        once per ``request["id"]``: the gateway sends a steer again when Temporal's answer was
        lost, and a signal that landed all the same must not be read twice."""
        if request["id"] in self._steer_ids:
            return
        self._steer_ids.add(request["id"])
        text = request["text"]
        session = self._run.session if self._run is not None else None
        if session is not None:
            session.steer(text)
        else:
            self._steered.append(text)

    # A child that ends before it ever ran leaves the update unfinished: the gateway then learns
    # how it ended from the result instead.
    @workflow.update(name=RUNNING_UPDATE, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def running(self) -> bool:
        """Completes once the child is built and makes its first model call (True), or has ended
        without ever running (False): how the gateway learns a worker took it, without polling."""
        await workflow.wait_condition(lambda: self._running_since > 0 or self._ended)
        return self._running_since > 0

    @workflow.query(name=ACTIVITY_QUERY)
    def activity(self) -> str:
        session = self._run.session if self._run is not None else None
        return "starting" if session is None else session.activity.description

    # -- the child --------------------------------------------------------------------------

    async def _child(self, job: ChildJob) -> ChildOutcome:
        limits, resume = self._limits, self._resume
        if resume is not None:
            prepared = resume["prepared"]
        else:
            self._setup = asyncio.ensure_future(workflow.execute_local_activity(
                PREPARE, job.to_dict(), start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=[SETUP_ERROR])))
            try:
                prepared = await self._setup
            except asyncio.CancelledError:
                return ChildOutcome("interrupted", "interrupted", None, self._stop_reason or "cancelled")
            except FailureError as exc:
                if isinstance(exc, TemporalCancelled) or isinstance(exc.cause, TemporalCancelled):
                    return ChildOutcome("interrupted", "interrupted", None, self._stop_reason or "cancelled")
                # A local activity's failure comes as its own error (an `ApplicationError`), not in an
                # `ActivityError`: uncaught, it failed the workflow, and the child ended with the words
                # "the child's workflow ended without a result" before why.
                return ChildOutcome("error", "error", None, _reason(exc))
        # What a run continued as new needs to build the child again (the conversation has the rest).
        self._prepared = {"tools": prepared["tools"], "model": prepared["model"]}
        compaction = None if limits.compaction is None else Compactor(CompactionPolicy(**limits.compaction))
        session = AgentSession(
            model=_ActivityModel(self, prepared["model"]),
            tools={spec["name"]: self._tool(spec) for spec in prepared["tools"]},
            system_prompt=prepared.get("system_prompt", ""), role=job.role, session_id=job.subagent_id,
            max_iterations=limits.max_iterations, workspace=Path(job.workspace),
            enabled_toolsets=None if job.toolsets is None else frozenset(job.toolsets), depth=job.depth,
            metadata={**job.metadata, "goal": job.goal, "parent_session_id": job.parent_session_id},  # ours win
            clock=_Host.clock, compactor=compaction,
        )
        run = self._run = ChildRun(job, _Host())  # type: ignore[arg-type]  # only its clock is read
        run.session, run.turn_ids = session, True
        for text in self._steered:
            session.steer(text)
        self._steered.clear()
        if resume is not None:  # a stop that came meanwhile ends it at once, keeping what it had
            run.stop_reason = self._stop_reason
            return await run.execute(resume=resume["run"])
        if self._stop_reason is not None:
            return ChildOutcome("interrupted", "interrupted", None, self._stop_reason)
        self._running_since = workflow.time()
        return await run.execute(prepared["content"])

    def _continue_due(self) -> bool:
        info = workflow.info()
        return (info.is_continue_as_new_suggested() or info.get_current_history_length() >= _CONTINUE_AFTER_EVENTS
                or info.get_current_history_size() >= _CONTINUE_AFTER_BYTES)

    def _history_full(self) -> bool:
        """Whether another call could take the run's history past Temporal's hard limits, which would
        terminate the workflow and lose the child with all it had done (a history is measured as of the
        start of the current workflow task, which is after the last call's result was recorded)."""
        info = workflow.info()
        return (info.get_current_history_length() >= _FULL_AFTER_EVENTS
                or info.get_current_history_size() >= _FULL_AFTER_BYTES)

    async def _continue_as_new(self) -> None:
        """Continue as new, carrying the child as it stands: called where its turn is about to call
        the model, never while an activity runs. Returns (and the child goes on in this run) only when
        its state would not fit in one payload, or it is being stopped."""
        # Signals and updates that came with this task are handled first (a steer lands in the state
        # carried); one that reaches Temporal while the switch is under way has the switch refused, and
        # the task is done again with it. Waiting lets a stop that came with this task end the child here.
        await workflow.wait_condition(workflow.all_handlers_finished)
        run = self._run
        if self._stop_reason is not None or run is None or run.timeout is not None:
            return
        carried = {"prepared": self._prepared, "run": run.saved(), "steer_ids": sorted(self._steer_ids),
                   "calls": self._calls, "running_since": self._running_since}
        wire = {"job": self._wire_job, "limits": self._limits.to_dict(), "resume": carried}
        if (too_big := oversize("the child's state", wire)) is not None:
            workflow.logger.warning("child %s cannot continue as new: %s", run.job.subagent_id, too_big)
            return
        workflow.continue_as_new(wire)

    def _stop(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._run is not None:
            self._run.stop(reason)
        elif self._setup is not None:
            self._setup.cancel()

    def _tool(self, spec: Mapping[str, Any]) -> Tool:
        name = spec["name"]

        async def handler(args: dict[str, Any], ctx: Any) -> str:
            return await self.call_tool(name, args, ctx.call_id, ctx.turn_id)

        # The worker's own tool checks the arguments, with the messages made for the model.
        return Tool(name, spec.get("description", ""), spec.get("parameters") or {"type": "object"}, handler,
                    spec.get("toolset", "unknown"), checks_own_arguments=True)

    # -- activities ----------------------------------------------------------------------------

    async def call_model(self, request: ModelRequest) -> ModelResponse:
        # Not before a run's first call: a run whose carried state alone is past the bound (a server whose
        # suggestion comes early) would continue as new for ever, the child making no step.
        if self._continue_due() and not (self._run_calls == 0 and workflow.patched(_NO_EMPTY_RUNS)):
            await self._continue_as_new()
        run = self._run
        if (self._history_full() and self._stop_reason is None and (run is None or run.timeout is None)
                and workflow.patched(_HISTORY_BOUND)):
            # It could not switch runs (its state is over a payload): ended here, saying why, not terminated
            # by Temporal a few calls on with nothing to show.
            raise ModelError("the child's Temporal history is near its size limit and its state is too big to"
                             " carry to a new run (docs/scale-out.md)", kind="bad_request")
        job, limits = self._job, self._limits
        cap = limits.idle_cap_seconds
        # As the in-process monitor decides: the lower limit fires; on a tie it is the idle cap.
        limit, stalled = min((limits.stale_between_turns_seconds, True), (cap, False)) if cap else (
            limits.stale_between_turns_seconds, True)
        body = {"provider": job.provider, "model": job.model, "backend": job.backend, "route": job.route,
                "request": request_to_wire(request), "heartbeat": limits.heartbeat_interval_seconds}
        warn_at = WARNING_FRACTION * cap if cap is not None and WARNING_FRACTION * cap < limit else None
        session = self._run.session if self._run is not None else None
        # The compactor's summary request has a short conversation of its own: measured whole.
        size = self._sized.body(body, session.messages, session.history_version) if (
            session is not None and request.messages is session.messages) else None
        result = await self._activity(MODEL_CALL, body, "model", limit, stalled, warn_at=warn_at, size=size)
        return response_from_wire(result)

    async def call_tool(self, name: str, args: dict[str, Any], call_id: str, turn_id: str) -> str:
        if self._history_full() and workflow.patched(_HISTORY_BOUND):
            raise ToolError(HISTORY_FULL)
        body = {"child": self._slim, "name": name, "args": args, "call_id": call_id, "turn_id": turn_id,
                "heartbeat": self._limits.heartbeat_interval_seconds}
        result = await self._activity(TOOL_CALL, body, f"tool-{name}", self._limits.stale_in_tool_seconds, True)
        if not result.get("ok"):
            raise ToolError(result.get("error") or f"{name} failed")
        return result.get("output", "")

    async def _activity(self, name: str, body: dict[str, Any], label: str, limit: float, stalled: bool, *,
                        warn_at: float | None = None, size: int | None = None) -> dict[str, Any]:
        # Temporal would refuse to schedule the call, failing every workflow task for ever: the child
        # ends (or the tool call fails) saying why instead.
        if name == MODEL_CALL and (too_big := oversize("the child's conversation", body, size)) is not None:
            raise ModelError(too_big, kind="bad_request")
        if name == TOOL_CALL and (too_big := oversize(f"the arguments of {body['name']}", body)) is not None:
            raise ToolError(too_big)
        self._calls += 1
        self._run_calls += 1
        started = workflow.time()
        handle = workflow.start_activity(
            name, body, activity_id=f"{self._calls}-{label}", schedule_to_close_timeout=timedelta(seconds=limit),
            heartbeat_timeout=timedelta(seconds=self._limits.heartbeat_timeout_seconds), retry_policy=_RETRY,
            # A stop takes effect at once: the child makes no further step and reports. The call in
            # flight on its worker is abandoned and cut off there at its next heartbeat.
            cancellation_type=ActivityCancellationType.TRY_CANCEL)
        try:
            if warn_at is not None:
                done, _ = await asyncio.wait([handle], timeout=warn_at)
                if not done and self._run is not None and self._run.session is not None:
                    self._run.session.steer(budget_warning(workflow.time() - started, warn_at / WARNING_FRACTION))
            return await handle
        except asyncio.CancelledError:
            handle.cancel()  # asyncio.wait does not pass a cancellation on to what it waits for
            raise
        except ActivityError as exc:
            if isinstance(exc.cause, TemporalCancelled):
                raise asyncio.CancelledError() from None  # our own stop, which the session expects back
            if isinstance(exc.cause, TimeoutError) and exc.cause.type is TimeoutType.SCHEDULE_TO_CLOSE:
                await self._stalled(limit, workflow.time() - started, stalled)
            if name == MODEL_CALL:
                cause = exc.cause
                kind = str(cause.details[0]) if isinstance(cause, ApplicationError) and cause.details else "error"
                raise ModelError(_reason(exc), kind=kind) from None
            raise ToolError(_reason(exc)) from None

    async def _stalled(self, limit: float, quiet: float, stalled: bool) -> None:
        """Stop the child for lack of progress, exactly as the in-process monitor does: the
        stop cancels this very call, and the turn ends with the partial output it had."""
        run = self._run
        assert run is not None and run.session is not None
        timeout = make_timeout(run.session.activity.answered_api_calls, workflow.time() - self._running_since, limit,
                               quiet, stalled=stalled)
        workflow.logger.warning("child %s: %s", run.job.subagent_id, timeout.message())
        asyncio.get_running_loop().call_soon(run.stop_for_timeout, timeout)
        await asyncio.get_running_loop().create_future()


def _fitting(outcome: ChildOutcome) -> dict[str, Any]:
    """The outcome as the workflow's result; one over Temporal's payload limit could never be
    recorded (the workflow would retry completing for ever), so it fails, keeping what it spent."""
    body = outcome.to_dict()
    too_big = oversize("the child's outcome", body)
    if too_big is None:
        return body
    return dataclasses.replace(outcome, status="failed", exit_reason="error", summary=None, error=too_big,
                               tool_trace=(), schema=None, error_kind=None).to_dict()


def _reason(exc: FailureError) -> str:
    cause = exc if isinstance(exc, ApplicationError) else exc.cause
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or exc)
