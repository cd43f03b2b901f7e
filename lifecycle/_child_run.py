"""One child from build to completion, and the completion pipeline it goes through
exactly once, whichever way it ends."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from agent import AgentSession, Model, ToolTraceEntry, TurnResult, Usage
from lifecycle._children import ChildHost, ChildSpec, build_child
from lifecycle._images import first_turn_content_async
from lifecycle._liveness import Timeout
from lifecycle._output_schema import SCHEMA_NOTE, correction_prompt, validate_output
from lifecycle._project_context import ProjectContext

log = logging.getLogger("lifecycle.children")

_PROJECT_CONTEXT = ProjectContext()


@dataclass(slots=True)
class ChildOutcome:
    """How a child ended, in the vocabulary of delegate_task result entries."""

    status: str  # completed | failed | error | interrupted | timeout
    exit_reason: str  # completed | max_iterations | interrupted | error | timeout
    summary: str | None
    error: str | None
    api_calls: int = 0
    duration_seconds: float = 0.0
    usage: Usage = Usage()
    cost_usd: float | None = None
    model: str | None = None
    tool_trace: tuple[ToolTraceEntry, ...] = ()
    timeout: Timeout | None = None
    schema: dict[str, Any] | None = None
    """``schema_valid`` and, when invalid, ``schema_errors`` and ``schema_note``."""


class ChildRun:
    """One child. `finish` runs the completion pipeline at most once."""

    __slots__ = ("host", "parent", "session", "spec", "subagent_id", "parent_turn_id", "model", "timeout",
                 "_finished")

    def __init__(
        self, host: ChildHost, parent: AgentSession, spec: ChildSpec, subagent_id: str, parent_turn_id: str,
        *, model: Model,
    ):  # fmt: skip
        self.host = host
        self.parent = parent
        self.spec = spec
        self.subagent_id = subagent_id
        self.parent_turn_id = parent_turn_id
        self.model = model
        self.session: AgentSession | None = None
        self.timeout: Timeout | None = None
        self._finished = False

    async def start(self) -> AgentSession:
        context = await _PROJECT_CONTEXT.section(self.parent.workspace)
        self.session = build_child(
            self.host, self.parent, self.spec, subagent_id=self.subagent_id, model=self.model,
            project_context=context,
        )
        if self.host.hooks.has("subagent_start"):
            await self.host.hooks.run(
                "subagent_start",
                parent_session_id=self.parent.session_id,
                parent_turn_id=self.parent_turn_id,
                child_session_id=self.session.session_id,
                child_subagent_id=self.subagent_id,
                child_role=self.session.role,
                child_goal=self.spec.goal,
            )
        return self.session

    def stop_for_timeout(self, timeout: Timeout) -> None:
        """Called by the liveness monitor: the child made no progress in time."""
        if self.timeout is None and self.session is not None:
            self.timeout = timeout
            self.session.interrupt("timeout: no progress", hard=True)

    async def execute(self) -> ChildOutcome:
        """Run the child's turn (and one correction turn for a failed output contract);
        never raises except when the caller itself is cancelled."""
        session = self.session
        assert session is not None, "start() first"
        started = self.host.clock.monotonic()
        try:
            content: Any = self.spec.goal
            if self.spec.images:
                content = await first_turn_content_async(
                    self.spec.goal, self.spec.images, workspace=session.workspace,
                    supports_vision=bool(getattr(session.model, "supports_vision", False)),
                )
            result = await session.run_turn(content)
            outcome = outcome_from_turn(result)
            if self.spec.output_schema is not None and outcome.status == "completed":
                outcome = await self._check_contract(session, outcome)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in building or running must still end as a result
            log.exception("child %s crashed", self.subagent_id)
            outcome = ChildOutcome("error", "error", None, f"{type(exc).__name__}: {exc}")
        outcome.duration_seconds = self.host.clock.monotonic() - started
        if self.timeout is not None and outcome.status == "interrupted":
            outcome.status, outcome.exit_reason = "timeout", "timeout"
            outcome.error, outcome.timeout = self.timeout.message(), self.timeout
        return outcome

    async def _check_contract(self, session: AgentSession, outcome: ChildOutcome) -> ChildOutcome:
        schema = dict(self.spec.output_schema or {})
        valid, errors, _ = validate_output(outcome.summary or "", schema)
        if not valid:
            # Exactly one correction turn, with the exact errors; the schema is not pasted again.
            retry = await session.run_turn(correction_prompt(errors))
            corrected = outcome_from_turn(retry)
            corrected = _merged(outcome, corrected)
            if corrected.status != "completed":
                return corrected
            outcome = corrected
            valid, errors, _ = validate_output(outcome.summary or "", schema)
        outcome.schema = {"schema_valid": True} if valid else {
            "schema_valid": False, "schema_errors": errors, "schema_note": SCHEMA_NOTE,
        }
        return outcome

    async def finish(self, outcome: ChildOutcome) -> bool:
        """Memory notification, ``subagent_stop`` hooks, release, cost roll-up.
        Returns False (doing nothing) when it already ran."""
        if self._finished:
            return False
        self._finished = True
        child_id = self.session.session_id if self.session else self.subagent_id
        if self.host.memory is not None:
            try:
                await self.host.memory.on_delegation(
                    parent_session_id=self.parent.session_id, goal=self.spec.goal,
                    summary=outcome.summary or "", child_session_id=child_id,
                )
            except Exception:
                log.exception("memory provider failed for child %s", self.subagent_id)
        if self.host.hooks.has("subagent_stop"):
            await self.host.hooks.run(
                "subagent_stop",
                parent_session_id=self.parent.session_id,
                parent_turn_id=self.parent_turn_id,
                child_session_id=child_id,
                child_role=self.session.role if self.session else self.spec.role,
                child_summary=outcome.summary,
                child_status=outcome.status,
                child_exit_reason=outcome.exit_reason,
                tool_call_history=[e.to_dict() for e in outcome.tool_trace],
                duration_ms=int(outcome.duration_seconds * 1000),
            )
        self.parent.add_cost(outcome.usage, outcome.cost_usd, outcome.api_calls)
        self.session = None  # release: the child's conversation is not kept
        return True


def outcome_from_turn(result: TurnResult) -> ChildOutcome:
    if result.exit_reason == "interrupted":
        status, error = "interrupted", result.interrupt_reason or "interrupted"
    elif result.exit_reason == "error":
        status, error = "failed", result.error or "the child's model call failed"
    elif result.text:
        status, error = "completed", None
    else:
        status, error = "failed", "Subagent did not produce a response."
    return ChildOutcome(
        status=status,
        exit_reason=result.exit_reason,
        summary=result.text or None,
        error=error,
        api_calls=result.api_calls,
        usage=result.usage,
        cost_usd=result.cost_usd,
        model=result.model,
        tool_trace=result.tool_trace,
    )


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
