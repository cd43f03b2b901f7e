"""Bridge to the lifecycle's host view until it lands: frozen snapshots of a session's children.

TEMPORARY: replaced by ``lifecycle.HostView`` / ``lifecycle.ChildSnapshot``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lifecycle import AsyncSubagentLifecycle, SubagentState


@dataclass(frozen=True, slots=True)
class ChildSnapshot:
    subagent_id: str
    parent_turn_id: str
    goal: str
    state: SubagentState
    created_at: float
    started_at: float | None
    completed_at: float | None
    activity: str
    summary: str | None
    error: str | None


class ChildrenView:
    def __init__(self, service: AsyncSubagentLifecycle) -> None:
        self._service = service

    def children(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        return tuple(_snapshot(r) for r in self._service.children_of(parent_session_id))

    def recent(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        return tuple(_snapshot(r) for r in self._service.recent_of(parent_session_id))

    def turn_progress(self, parent_session_id: str, turn_id: str) -> tuple[int, int]:
        return self._service.turn_progress(parent_session_id, turn_id)

    async def interrupt_children(self, parent_session_id: str, reason: str) -> int:
        return await self._service.interrupt_children(parent_session_id, reason)


def _snapshot(record) -> ChildSnapshot:
    run = record.run
    activity = run.session.activity.description if run is not None and run.session is not None else "waiting"
    result = record.result
    return ChildSnapshot(record.handle.subagent_id, record.run_turn_id, record.goal, record.state, record.created_at,
                         record.started_at, record.completed_at, activity, result.summary if result else None,
                         result.error_message if result else None)
