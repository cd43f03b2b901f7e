"""The completion pipeline: what happens on the service's side when a child ends,
exactly once per child, whichever engine ran it and however it ended."""

from __future__ import annotations

import logging

from agent import AgentSession
from lifecycle._children import ChildHost
from lifecycle._job import ChildJob, ChildOutcome

log = logging.getLogger("lifecycle.children")


async def complete(host: ChildHost, job: ChildJob, parent: AgentSession | None, outcome: ChildOutcome) -> None:
    """Tell the memory provider, run ``subagent_stop`` hooks in registration order (a failing
    one is logged, the rest still run), and add the child's usage and cost to its parent's
    totals. ``parent`` is None for a child re-attached after a restart: the totals of the
    session that launched it are gone with that process, so there is nothing to add to."""
    sid = job.subagent_id
    if host.memory is not None:
        try:
            await host.memory.on_delegation(
                parent_session_id=job.parent_session_id, goal=job.goal,
                summary=outcome.summary or "", child_session_id=sid,
            )
        except Exception:
            log.exception("memory provider failed for child %s", sid)
    if host.hooks.has("subagent_stop"):
        await host.hooks.run(
            "subagent_stop",
            parent_session_id=job.parent_session_id,
            parent_turn_id=job.parent_turn_id,
            child_session_id=sid,
            child_role=job.role,
            child_summary=outcome.summary,
            child_status=outcome.status,
            child_exit_reason=outcome.exit_reason,
            tool_call_history=[e.to_dict() for e in outcome.tool_trace],
            duration_ms=int(outcome.duration_seconds * 1000),
        )
    if parent is not None:
        parent.add_cost(outcome.usage, outcome.cost_usd, outcome.api_calls)
