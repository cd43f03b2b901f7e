"""The activity record: the only thing liveness monitoring reads about a session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Activity:
    """Always current while a turn runs; mutated only by the session's own loop.

    ``last_activity`` is on the session clock's monotonic scale.
    """

    api_calls: int = 0
    """Model calls started, one still in flight included."""
    answered_api_calls: int = 0
    """Model calls that answered: what a turn result's ``api_calls`` counts."""
    current_tool: str | None = None
    tool_started_at: float | None = None
    last_activity: float = 0.0
    description: str = "idle"
    answered: bool = False
    """The model has given the running turn its final answer (no tool calls): the turn only winds
    down now (its hooks), so stopping it would only lose that answer."""

    def touch(self, now: float, description: str) -> None:
        self.last_activity = now
        self.description = description
