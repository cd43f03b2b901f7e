"""`ChildSnapshot`: what a host may see of one child, frozen at the moment it asked."""

from __future__ import annotations

from dataclasses import dataclass

from agent import ToolTraceEntry
from agent._frozen import fast_init
from lifecycle._children import ChildSpec
from lifecycle._contract import SubagentState
from lifecycle._job import ChildJob
from lifecycle._record import Record

TRACE_KEPT = 50
"""Tool calls a finished child's snapshot keeps (its latest)."""


@fast_init
@dataclass(frozen=True, slots=True)
class ChildSnapshot:
    """One child as it was when the snapshot was taken; it never changes afterwards."""

    subagent_id: str
    """The child's lifecycle id (its handle's ``subagent_id``)."""
    parent_session_id: str | None
    """The session that launched it."""
    parent_turn_id: str
    """The parent turn that launched it; empty when unknown (a child read back after a restart)."""
    goal: str
    """The task it was given."""
    role: str
    """The effective role: ``leaf`` or ``orchestrator``."""
    state: SubagentState
    """Where it was: PENDING, STARTING, RUNNING, CANCEL_REQUESTED or a terminal state."""
    created_at: float
    """When it was launched (epoch seconds)."""
    started_at: float | None
    """When it began running; None if it never ran."""
    completed_at: float | None
    """When it finished; None while it is live."""
    activity: str
    """What it was doing: ``waiting for a slot``, ``starting``, ``waiting for the model``,
    ``running web_search``, ``finishing`` or ``finished``."""
    summary: str | None
    """Its final answer, or the partial output of a child that did not complete; None while live."""
    error: str | None
    """What went wrong, once finished; None while live and on success."""
    model: str | None
    """The model it runs on."""
    route: str | None = None
    """The delegation route it was launched on (an option of its session's backend); None for
    the default child model, and for a child read back from the journal."""
    task: ChildSpec | None = None
    """The task as it was launched (goal, context, effective role, toolsets, route...), for
    running it again; None for a child read back from the journal."""
    tool_trace: tuple[ToolTraceEntry, ...] = ()
    """A finished child's latest tool calls (metadata only, at most `TRACE_KEPT`); empty while live."""


def snapshot(record: Record, activity: str) -> ChildSnapshot:
    result = record.result
    job = record.job
    outcome = record.outcome
    return ChildSnapshot(
        subagent_id=record.handle.subagent_id,
        parent_session_id=record.handle.parent_session_id,
        parent_turn_id=record.turn_id,
        goal=record.goal,
        role=record.handle.role,
        state=record.state,
        created_at=record.created_at,
        started_at=record.started_at,
        completed_at=record.completed_at,
        activity=activity,
        summary=result.summary if result is not None else None,
        error=result.error_message if result is not None else None,
        model=record.handle.model,
        route=job.route if job is not None else None,
        task=task_of(job) if job is not None else None,
        tool_trace=outcome.tool_trace[-TRACE_KEPT:] if outcome is not None else (),
    )


def task_of(job: ChildJob) -> ChildSpec:
    """The task a job runs, as a spec that launches the same child again."""
    return ChildSpec(
        goal=job.goal, context=job.context, role=job.role, allowed_toolsets=job.toolsets, metadata=job.metadata,
        output_schema=job.output_schema, images=job.images, route=job.route, backend=job.backend,
    )
