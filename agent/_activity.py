"""The activity record: the only thing liveness monitoring reads about a session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Activity:
    """Always current while a turn runs; mutated only by the session's own loop.

    ``last_activity`` is on the session clock's monotonic scale.
    """

    api_calls: int = 0
    """Model calls started, the one in flight included."""
    in_model_call: bool = False
    """A model call is in flight: ``api_calls - in_model_call`` calls have completed."""
    current_tool: str | None = None
    tool_started_at: float | None = None
    last_activity: float = 0.0
    description: str = "idle"

    @property
    def completed_api_calls(self) -> int:
        """Model calls that have answered (the count a turn result reports)."""
        return self.api_calls - self.in_model_call

    def touch(self, now: float, description: str) -> None:
        self.last_activity = now
        self.description = description
