"""`HostView`: what the process hosting the lifecycle (the gateway) sees of children.

Everything it returns is a frozen `ChildSnapshot` or a number, taken at the
call; no lifecycle state leaves through it. Its one action stops a session's
children, for ``/stop`` and ``/new``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lifecycle._snapshot import ChildSnapshot

if TYPE_CHECKING:
    from lifecycle._supervisor import Supervisor


class HostView:
    """Get it from `AsyncSubagentLifecycle.host_view()`; use it on the service's event loop."""

    __slots__ = ("_supervisor",)

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor

    def children(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        """The session's live (non-terminal) children, in launch order."""
        supervisor = self._supervisor
        return tuple(supervisor.snapshot(r) for r in supervisor.children(parent_session_id))

    def recent(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        """The session's last 10 finished children, oldest first; each is forgotten once it is
        older than ``lifecycle.retention_seconds``."""
        return self._supervisor.tallies.recent(parent_session_id)

    def turn_progress(self, parent_session_id: str, turn_id: str) -> tuple[int, int]:
        """(finished, launched) children of one parent turn while any of them runs; (0, 0)
        before the first launch and once all have finished."""
        return self._supervisor.tallies.turn_progress(parent_session_id, turn_id)

    async def interrupt_children(self, parent_session_id: str, reason: str) -> int:
        """Interrupt every live child of the session: each ends INTERRUPTED with the partial
        output it had (``reason`` as its error), a queued one at once, a running one at its
        next safe boundary. Returns how many it stopped: children already finishing, or
        finished, are not counted. Returns before the running ones have stopped."""
        supervisor = self._supervisor
        return await supervisor.interrupt(supervisor.children(parent_session_id), reason)
