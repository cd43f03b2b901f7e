"""The completion pipeline: what happens on the service's side when a child ends,
exactly once per child, whichever engine ran it and however it ended."""

from __future__ import annotations

import logging

from agent import AgentSession
from lifecycle._children import ChildHost
from lifecycle._contract import STATES, SubagentResult, SubagentState, SubagentUsage, result_and_text
from lifecycle._job import ChildJob, ChildOutcome
from lifecycle._journal import JournalRecord
from lifecycle._record import Record

log = logging.getLogger("lifecycle.children")


def roll_up(parent: AgentSession | None, turn_id: str, outcome: ChildOutcome) -> None:
    """Add the child's usage and cost to its parent's totals and to the figures of the turn
    that launched it (or the parent's next turn, if that one has ended: `AgentSession.add_cost`).
    ``parent`` is None for a child re-attached after a restart: the session that launched it
    went with that process, so there is nothing to add to."""
    if parent is not None:
        parent.add_cost(outcome.usage, outcome.cost_usd, outcome.api_calls, turn_id=turn_id)


def listening(host: ChildHost) -> bool:
    """Whether `notify` has anyone to tell (most hosts have no one: then it need not be awaited)."""
    return host.memory is not None or "subagent_stop" in host.hooks.registered


async def notify(host: ChildHost, job: ChildJob, outcome: ChildOutcome, *, ran_here: bool) -> None:
    """Tell the memory provider, then run ``subagent_stop`` hooks in registration order (a
    failing one is logged, the rest still run). ``ran_here``: the child ran in this process, so
    its own ``model_call`` hooks already ran here (`Engine.runs_here`)."""
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
        usage = outcome.usage
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
            child_model=outcome.model or job.model,
            child_usage={"api_calls": outcome.api_calls, "prompt_tokens": usage.prompt_tokens,
                         "completion_tokens": usage.completion_tokens, "cost_usd": outcome.cost_usd},
            child_error_kind=outcome.error_kind,
            child_ran_here=ran_here,
        )


def terminal(record: Record, outcome: ChildOutcome, state: SubagentState, now: float) -> tuple[SubagentResult, JournalRecord]:
    """The child's final, hashed result and the journal row that carries it."""
    encoded = record.handle_json()  # as the PENDING row carried it, for the result's text and the row alike
    usage = outcome.usage
    result, text = result_and_text(
        record.handle, state, outcome.summary, outcome.error,
        None if state is STATES.SUCCEEDED else outcome.status.upper(), outcome.exit_reason,
        SubagentUsage._build(outcome.api_calls, usage.prompt_tokens, usage.completion_tokens, outcome.cost_usd),
        record.started_at, now, outcome.duration_seconds, encoded,
    )
    return result, record.journal_row(state=state, updated_at=now, completed_at=now, result=text)
