"""What a turn returns, and what a running turn keeps until then."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agent._frozen import fast_init
from agent._model import Usage

_NO_USAGE = Usage()

ExitReason = Literal["completed", "max_iterations", "interrupted", "error"]


@fast_init
@dataclass(frozen=True, slots=True)
class ToolTraceEntry:
    """Metadata only: never arguments or output themselves."""

    name: str
    argument_keys: tuple[str, ...]
    input_bytes: int
    output_bytes: int
    ok: bool
    duration_seconds: float

    def to_dict(self) -> dict:
        return {
            "tool": self.name,
            "argument_keys": list(self.argument_keys),
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "ok": self.ok,
            "duration_seconds": round(self.duration_seconds, 6),
        }


@fast_init
@dataclass(frozen=True, slots=True)
class TurnResult:
    turn_id: str
    text: str
    """The final reply; when the turn did not complete, the last real assistant text (partial output)."""
    exit_reason: ExitReason
    api_calls: int
    usage: Usage
    cost_usd: float | None
    duration_seconds: float
    tool_trace: tuple[ToolTraceEntry, ...]
    error: str | None = None
    interrupt_reason: str | None = None
    model: str | None = None
    truncated: bool = False
    """The final reply was cut off at the model's output-length limit."""
    error_kind: str | None = None
    """The `ModelError` kind of the model call that ended the turn (``exit_reason="error"``)."""
    summary_failed: bool = False
    """A context compaction in this turn got no summary from the model (it failed or answered
    nothing) and kept only the first line of each older message: details of the earlier
    conversation may be lost, which the user should hear."""
    filtered: bool = False
    """The provider's content filter withheld the rest of the final reply (`ModelResponse.filtered`)."""
    retry_after: float | None = None
    """Seconds the provider asked to wait before asking again, when the model call that ended the turn
    failed with such a hint (`agent.ModelError.retry_after`)."""
    message_too_long: tuple[int, int] | None = None
    """(the turn's user message's estimated tokens, the tokens the model's context window leaves it beside the
    system prompt and the tools' schemas) when the server refused the turn's model call as too long before any
    answer of the turn and the message alone takes more than that (a pasted log): a shorter message would fit,
    a new conversation would not help."""


@dataclass(slots=True)
class _TurnState:
    turn_id: str
    started: float
    api_calls: int = 0
    child_calls: int = 0
    """Of `api_calls`, those `AgentSession.add_cost` added (the children's, the compactor's summaries): not
    this turn's own model calls, which `ModelRequest.iteration` counts."""
    usage: Usage = _NO_USAGE
    cost: float | None = None
    last_text: str = ""
    final_text: str = ""
    model_name: str | None = None
    truncated: bool = False
    filtered: bool = False
    retry_after: float | None = None
    summary_failed: bool = False
    trace: list[ToolTraceEntry] = field(default_factory=list)
    iterations: int = 0
    """Model answers with tool calls so far: what `AgentSession.max_iterations` bounds."""
    asked_again: bool = False
    """The next model call is one asked again after compacting for a context overflow (once per answer)."""
    cut_offs: int = 0
    """Model answers in a row whose tool calls were cut off at the output-length limit
    (`agent._session.CUT_OFF_CALLS_ENDING_A_TURN`): here, not in the loop, so a saved turn carries it."""


def _charge(turn: _TurnState, usage: Usage, cost_usd: float | None, api_calls: int) -> None:
    if usage.prompt_tokens or usage.completion_tokens:
        turn.usage += usage
    turn.cost = _plus(turn.cost, cost_usd)
    turn.api_calls += api_calls


def _plus(cost: float | None, more: float | None) -> float | None:
    """None (no provider reported a cost) stays None until one does."""
    return cost if more is None else (cost or 0.0) + more
