"""`BackgroundDispatch`: what a background ``delegate_task`` call hands its host.

The tool launches the children (journaled before it returns), then tells the host
once, synchronously, before the model sees the dispatch: the host records it
durably and delivers the results when the children have finished — after a
restart too, from the journal. Plain data: it survives being written down.
"""

from __future__ import annotations

from dataclasses import dataclass

from lifecycle._children import ChildSpec


@dataclass(frozen=True, slots=True)
class DispatchedTask:
    subagent_id: str
    """The child running the task."""
    spec: ChildSpec
    """The task as the model gave it (goal, context, role, toolsets, schema, images, index)."""


@dataclass(frozen=True, slots=True)
class BackgroundDispatch:
    delegation_id: str
    """Unique per call; the id the model was told."""
    parent_session_id: str
    """The agent session that delegated."""
    parent_turn_id: str
    """The turn that delegated (the host's turn id)."""
    dispatched_at: float
    """When the children were launched, on the service's clock."""
    tasks: tuple[DispatchedTask, ...]
    """In task order."""
