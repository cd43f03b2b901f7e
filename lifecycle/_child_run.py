"""One child run by the in-process engine, from its build to its reported end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from agent import AgentSession, TurnResult
from agent._errors import model_failure_kind, model_failure_text
from agent.images import first_turn_content_async
from lifecycle._contract import INCOMPLETE_NOTES
from lifecycle._engine import EngineHost
from lifecycle._job import PROCESS_EXIT, ChildJob, ChildOutcome
from lifecycle._liveness import Timeout, Watch
from lifecycle._output_schema import SCHEMA_NOTE, correction_prompt, validate_output
from lifecycle._project_context import ProjectContext

log = logging.getLogger("lifecycle.children")

_PROJECT_CONTEXT = ProjectContext()


class Slots(Protocol):
    """What a `ChildRun` tells the engine that gave it a slot (`InProcessEngine`)."""

    def run_ended(self, run: ChildRun) -> None:
        """Its end is about to be reported: the slot is free, while the service finishes it."""

    def run_done(self, run: ChildRun) -> None:
        """Its end has been reported (the service's completion pipeline included): forget it."""


class ChildRun:
    """One child in this process. `stop` may come at any time; the run checks it before
    each step, and a running turn is interrupted at its next safe boundary."""

    __slots__ = ("job", "host", "task", "session", "stop_reason", "timeout", "running_since", "watch", "turn_ids",
                 "first")

    def __init__(self, job: ChildJob, host: EngineHost) -> None:
        self.job = job
        self.host = host
        self.task: asyncio.Task | None = None
        """The task running it (held here: the event loop keeps only weak references)."""
        self.session: AgentSession | None = None
        self.stop_reason: str | None = None
        """Set by the first `stop`; the outcome's error when it lands before the child runs."""
        self.timeout: Timeout | None = None
        self.running_since: float | None = None
        """The clock's monotonic time its turn began; None before and after."""
        self.watch: Watch | None = None
        """Its liveness state, from the monitor's first look at it."""
        self.turn_ids = False
        """Name the child's turns after it (``<id>-turn-<n>``) instead of fresh random ids:
        a workflow replays its code and must make the same ids again."""
        self.first: ChildOutcome | None = None
        """The first turn's outcome while the correction turn of a failed output contract runs."""

    async def run(self, slots: Slots) -> None:
        """The child's whole life here, in one coroutine (a thousand of them wait at once):
        report starting, build it, report running, run its turn (and one correction turn for
        a failed output contract), give its slot up (`Slots.run_ended`) and report it finished exactly
        once however it ended, and finally say it is done (`Slots.run_done`). Never raises but for its
        own cancellation. ``slots`` is the engine, not two bound methods: each would be one more object
        held by each of a thousand waiting children."""
        host, job = self.host, self.job
        sid = job.subagent_id
        try:
            try:
                if self.stop_reason is None:
                    await host.starting(sid)
                    context = _PROJECT_CONTEXT.cached(job.workspace)
                    if context is None:
                        context = await _PROJECT_CONTEXT.section(job.workspace)
                    self.session = host.build_child(job, context)
                if self.stop_reason is not None:
                    outcome = self.stopped()  # it never makes a model call
                else:
                    host.running(sid)
                    outcome = await self.execute()
            except asyncio.CancelledError:
                slots.run_ended(self)
                await host.finished(sid, ChildOutcome("interrupted", "interrupted", None, PROCESS_EXIT))
                raise
            except Exception as exc:
                log.exception("child %s failed to start", sid)
                outcome = ChildOutcome("error", "error", None, self._masked(exc))
            slots.run_ended(self)
            await host.finished(sid, outcome)
        except Exception:  # the service records its own failures; reaching here is a bug worth a loud line
            log.exception("child %s could not be finished", sid)
        finally:
            slots.run_done(self)

    def _ran(self, outcome: ChildOutcome, seconds: float) -> None:
        """Complete the outcome of a turn: its duration, and a timeout for the liveness monitor's stop."""
        outcome.duration_seconds = seconds
        if self.timeout is not None and outcome.status == "interrupted":
            outcome.status, outcome.exit_reason = "timeout", "timeout"
            outcome.error, outcome.timeout = self.timeout.message(), self.timeout

    def stopped(self) -> ChildOutcome:
        """The outcome of a child stopped before it ran."""
        return ChildOutcome("interrupted", "interrupted", None, self.stop_reason or "interrupted")

    def stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.session is not None:
            self.session.interrupt(reason, hard=True)

    def stop_for_timeout(self, timeout: Timeout) -> None:
        """Called by the liveness monitor: the child made no progress in time."""
        if self.timeout is None and self.session is not None:
            self.timeout = timeout
            self.session.interrupt("timeout: no progress", hard=True)

    def saved(self) -> dict[str, Any]:
        """The running child as JSON-ready data, for `execute` (``resume=``) to run on in another
        `ChildRun`: taken where its turn is about to call its model (see `AgentSession.saved_turn`)."""
        assert self.session is not None and self.running_since is not None, "only a running child can be saved"
        return {"turn": self.session.saved_turn(), "started": self.running_since,
                "first": None if self.first is None else self.first.to_dict()}

    async def execute(self, content: Any = None, *, resume: Mapping[str, Any] | None = None) -> ChildOutcome:
        """Run the built child's turn (and one correction turn for a failed output contract) and
        return how it ended; never raises but for the caller's own cancellation. ``content`` is
        the first turn's message when the caller built it already (a workflow cannot read the
        images itself); by default the goal, with the job's images read from the workspace.
        ``resume``, what `saved` gave, runs on the turn it saved instead, as if it had never stopped."""
        session, job, clock = self.session, self.job, self.host.clock
        assert session is not None, "build the child first"
        started = self.running_since = clock.monotonic() if resume is None else resume["started"]
        try:
            correcting = resume is not None and resume["first"] is not None
            if resume is not None:
                # A stop that landed before it ran on ends it at once, with the partial output it had.
                turn = await session.resume_turn(resume["turn"], interrupted=self.stop_reason)
                outcome = outcome_from_turn(turn, session.max_iterations, session.redact)
                if correcting:  # it saved the correction turn of a failed output contract
                    outcome = self._corrected(ChildOutcome.from_dict(resume["first"]), outcome)
            else:
                if content is None:
                    content = job.goal
                    if job.images:
                        content = await first_turn_content_async(
                            job.goal, job.images, workspace=session.workspace,
                            supports_vision=bool(getattr(session.model, "supports_vision", False)),
                            file_scope=job.file_scope,
                        )
                if self.stop_reason is not None:  # a stop that landed while no turn ran must not be lost
                    outcome = self.stopped()
                else:  # `_turn`, inline: one coroutine less for every child
                    turn_id = f"{job.subagent_id}-turn-{session.turns_run}" if self.turn_ids else None
                    outcome = outcome_from_turn(await session.run_turn(content, turn_id=turn_id),
                                                session.max_iterations, session.redact)
            if not correcting and job.output_schema is not None and outcome.status == "completed":
                outcome = await self._check_contract(session, outcome)
            if job.output_schema is None and outcome.incomplete is not None and outcome.status == "completed":
                outcome.summary = f"{outcome.summary}\n\n{INCOMPLETE_NOTES[outcome.incomplete]}"
        except Exception as exc:  # a bug in running must still end as a result
            log.exception("child %s crashed", job.subagent_id)
            outcome = ChildOutcome("error", "error", None, self._masked(exc))
        finally:
            self.running_since = None
        self._ran(outcome, clock.monotonic() - started)
        return outcome

    def _masked(self, exc: Exception) -> str:
        """What the child failed on, masked by the parent's redactor (`AgentSession.redact`, which the child's
        session holds too): the parent model reads it in delegate_task's result, and a model quoting it passes it
        on. One that failed before its session was built has its parent's asked of the service (`Supervisor.get`:
        not part of `EngineHost`; a workflow's host has none, and a worker masks what it sends the workflow)."""
        session: Any = self.session
        if session is None:
            find = getattr(self.host, "get", None)
            session = getattr(find(self.job.subagent_id), "parent", None) if find is not None else None
        name = type(exc).__name__
        return mask_error(getattr(session, "redact", None), f"{name}: {exc}", f"{name}: {NOT_SHOWN}")

    async def _turn(self, session: AgentSession, content: Any) -> ChildOutcome:
        # A stop that landed while no turn ran (before this one) must not be lost.
        if self.stop_reason is not None:
            return self.stopped()
        turn_id = f"{self.job.subagent_id}-turn-{session.turns_run}" if self.turn_ids else None
        return outcome_from_turn(await session.run_turn(content, turn_id=turn_id), session.max_iterations,
                                 session.redact)

    async def _check_contract(self, session: AgentSession, outcome: ChildOutcome) -> ChildOutcome:
        valid, errors, _ = validate_output(outcome.summary or "", dict(self.job.output_schema or {}))
        if valid:
            outcome.schema = {"schema_valid": True}
            return outcome
        # Exactly one correction turn, with the exact errors; the schema is not pasted again.
        self.first = outcome
        return self._corrected(outcome, await self._turn(session, correction_prompt(errors)))

    def _corrected(self, first: ChildOutcome, second: ChildOutcome) -> ChildOutcome:
        """The outcome after the correction turn: both turns' spend, and the contract checked again. A
        correction turn that failed (its model call, its steps) keeps the work of the first, unvalidated,
        as a correction that is still invalid does; a stopped one ends as stopped."""
        self.first = None
        outcome = _merged(first, second)
        if outcome.status == "failed":
            outcome.status, outcome.exit_reason, outcome.summary = "completed", first.exit_reason, first.summary
            outcome.incomplete = first.incomplete
            outcome.error = outcome.error_kind = None
            _, errors, _ = validate_output(first.summary or "", dict(self.job.output_schema or {}))
            outcome.schema = {"schema_valid": False, "schema_errors": errors, "schema_note": SCHEMA_NOTE}
            return outcome
        if outcome.status != "completed":
            return outcome
        valid, errors, _ = validate_output(outcome.summary or "", dict(self.job.output_schema or {}))
        outcome.schema = {"schema_valid": True} if valid else {
            "schema_valid": False, "schema_errors": errors, "schema_note": SCHEMA_NOTE,
        }
        return outcome


def outcome_from_turn(result: TurnResult, max_iterations: int,
                      redact: Callable[[str], str] | None = None) -> ChildOutcome:
    """How a child's turn ended. A failed model call's error is the provider's words, masked by ``redact``
    before the result is built (and hashed): the parent model reads it, and may quote it on."""
    if result.exit_reason == "interrupted":
        status, error = "interrupted", result.interrupt_reason or "interrupted"
    elif result.exit_reason == "error":
        status, error = "failed", result.error or "the child's model call failed"
        if redact is not None:  # its kind kept when it cannot be masked: the chat's words for it are read from it
            kind = model_failure_kind(error)
            error = mask_error(redact, error, NOT_SHOWN if kind is None else model_failure_text(kind, NOT_SHOWN))
    elif result.text:
        status, error = "completed", None
    elif result.exit_reason == "max_iterations":  # says what to change: a narrower task, or a larger budget
        status, error = "failed", (f"it ran out of steps (delegation.max_iterations: {max_iterations}) "
                                   "before writing an answer")
    elif result.truncated:  # all its output (its reasoning, say, or cut-off tool calls) went before an answer
        status, error = "failed", "its model reached its limit on output length before it wrote an answer"
    elif result.filtered:  # a model (a delegation backend's) that told a withheld answer as an empty, filtered one
        status, error = "failed", model_failure_text("content_filter", _WITHHELD)
    else:
        status, error = "failed", "Subagent did not produce a response."
    incomplete = None
    if status == "completed" and (result.truncated or result.filtered):
        incomplete = "output_limit" if result.truncated else "content_filter"
    return ChildOutcome(  # positional, in field order: this runs for every child
        status, result.exit_reason, result.text or None, error, result.api_calls, 0.0, result.usage,
        result.cost_usd, result.model, result.tool_trace, None, None, result.error_kind, incomplete,
    )


NOT_SHOWN = "what went wrong is not shown (it could not be masked)"
"""A child's error whose masking raised, in its place."""


def mask_error(redact: Callable[[str], str] | None, error: str, fallback: str) -> str:
    """``error`` masked by ``redact``; ``fallback`` when a redactor (a host's own) raises: unmasked, the error
    could pass a secret on, and raised, the child's end was never reported (delegate_task waited for ever)."""
    if redact is None:
        return error
    try:
        return redact(error)
    except Exception as exc:
        # Its traceback is not logged: the redactor's error may quote the text it was to mask.
        log.warning("masking a child's error raised %s; its parent reads that it is not shown", type(exc).__name__)
        return fallback


_WITHHELD = "the provider's content filter withheld the answer"
"""As `agent.models.openai` words it when it raises `ModelError` ``content_filter`` for such an answer."""


def _merged(first: ChildOutcome, second: ChildOutcome) -> ChildOutcome:
    """The correction turn's outcome, with usage and trace counted across both turns."""
    second.api_calls += first.api_calls
    second.usage = first.usage + second.usage
    if first.cost_usd is not None or second.cost_usd is not None:
        second.cost_usd = (first.cost_usd or 0.0) + (second.cost_usd or 0.0)
    second.tool_trace = first.tool_trace + second.tool_trace
    if second.status != "completed" and not second.summary:
        second.summary = first.summary
    return second
