"""What a turn returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent._frozen import fast_init
from agent._model import Usage

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
