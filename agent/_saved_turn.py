"""A running turn as JSON-ready data and back: what `AgentSession.saved_turn` takes out of one
session and `AgentSession.resume_turn` runs on in another (a workflow that continues as new)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent._model import Usage
from agent._turn import ToolTraceEntry, _TurnState


def save_turn(session: Any) -> dict[str, Any]:
    """`AgentSession.saved_turn` of ``session`` (an `agent.AgentSession`)."""
    turn = session._turn
    assert turn is not None, "only a running turn can be saved"
    return {
        "messages": list(session.messages), "history_version": session.history_version, "turns_run": session.turns_run,
        "steer": list(session._steer), "answered_api_calls": session.activity.answered_api_calls,
        "totals": [session.total_usage.prompt_tokens, session.total_usage.completion_tokens, session.total_cost_usd,
                   session.total_api_calls],
        "turn": {
            "turn_id": turn.turn_id, "started": turn.started, "api_calls": turn.api_calls,
            "child_calls": turn.child_calls, "usage": [turn.usage.prompt_tokens, turn.usage.completion_tokens],
            "cost": turn.cost, "last_text": turn.last_text, "model_name": turn.model_name,
            "summary_failed": turn.summary_failed, "iterations": turn.iterations, "asked_again": turn.asked_again,
            "cut_offs": turn.cut_offs,
            "trace": [[e.name, list(e.argument_keys), e.input_bytes, e.output_bytes, e.ok, e.duration_seconds]
                      for e in turn.trace],
        },
    }


def load_turn(session: Any, saved: Mapping[str, Any]) -> _TurnState:
    """Give ``session`` (an `agent.AgentSession` running no turn) the conversation and totals of
    ``saved`` (`save_turn`'s), and return the turn to run on."""
    session.messages = list(saved["messages"])
    session.history_version, session.turns_run = saved["history_version"], saved["turns_run"]
    session._steer = [*saved["steer"], *session._steer]
    session.activity.api_calls = session.activity.answered_api_calls = saved["answered_api_calls"]
    prompt, completion, session.total_cost_usd, session.total_api_calls = saved["totals"]
    session.total_usage = Usage(prompt, completion)
    kept = saved["turn"]
    return _TurnState(kept["turn_id"], kept["started"], kept["api_calls"], kept["child_calls"],
                      Usage(*kept["usage"]), kept["cost"], kept["last_text"], model_name=kept["model_name"],
                      summary_failed=kept["summary_failed"], iterations=kept["iterations"],
                      asked_again=kept["asked_again"], cut_offs=kept.get("cut_offs", 0),
                      trace=[ToolTraceEntry(e[0], tuple(e[1]), *e[2:]) for e in kept["trace"]])
