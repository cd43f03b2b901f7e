"""`HostView`: what the process hosting the lifecycle (the gateway) sees of children.

Everything it returns is a frozen `ChildSnapshot`, a number or plain data, taken
at the call; no lifecycle state leaves through it. Its actions stop a session's
children (``/stop``, ``/new``) and launch children again for a host that
delivers background delegations itself (``/retry``, resuming after a restart).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import AgentSession, ToolTraceEntry
from lifecycle._children import ChildSpec
from lifecycle._contract import SubagentLifecycleError
from lifecycle._entries import apply_summary_budget, entry, entry_from_result
from lifecycle._record import Record
from lifecycle._routing import BackendUnavailable, ChildRoute, RouteRefused, with_route
from lifecycle._snapshot import ChildSnapshot

if TYPE_CHECKING:
    from lifecycle._supervisor import Supervisor

log = logging.getLogger("lifecycle.host_view")


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
        return self._supervisor.recent(parent_session_id)

    def turn_progress(self, parent_session_id: str, turn_id: str) -> tuple[int, int]:
        """(finished, launched) children of one parent turn while any of them runs; (0, 0)
        before the first launch and once all have finished."""
        return self._supervisor.turn_progress(parent_session_id, turn_id)

    async def interrupt_children(self, parent_session_id: str, reason: str) -> int:
        """Interrupt every live child of the session: each ends INTERRUPTED with the partial
        output it had (``reason`` as its error), a queued one at once, a running one at its
        next safe boundary. Returns how many it stopped: children already finishing, or
        finished, are not counted. Returns before the running ones have stopped."""
        supervisor = self._supervisor
        return await supervisor.interrupt(supervisor.children(parent_session_id), reason)

    async def stop_child(self, parent_session_id: str, subagent_id: str, reason: str) -> bool:
        """Interrupt one live child of the session: it ends INTERRUPTED with the partial output
        it had (``reason`` as its error), and its parent (a waiting tool, a background
        delivery) still gets its result. False when the session has no such live child."""
        supervisor = self._supervisor
        for record in supervisor.children(parent_session_id):
            if record.handle.subagent_id == subagent_id:
                return await supervisor.interrupt([record], reason) > 0
        return False

    def tool_trace(self, parent_session_id: str, subagent_id: str) -> tuple[ToolTraceEntry, ...] | None:
        """The child's latest tool calls, oldest first, metadata only: live from its engine
        (when the engine can tell), or as it finished while this process remembers it. None
        when it is not the session's child, or its trace is no longer kept (after a restart)."""
        supervisor = self._supervisor
        record = supervisor.get(subagent_id)
        if record is not None and record.handle.parent_session_id == parent_session_id:
            if record.outcome is not None:
                return record.outcome.tool_trace
            live = getattr(supervisor.engine, "tool_trace", None)
            if live is not None and not record.state.terminal:
                return live(subagent_id)
        for child in supervisor.recent(parent_session_id):
            if child.subagent_id == subagent_id:
                return child.tool_trace
        return None

    async def lookup(self, subagent_ids: Sequence[str]) -> dict[str, ChildSnapshot]:
        """Snapshots of these children, live or finished, from memory or (after a restart, or
        once forgotten) from the journal. Ids it does not know (swept, never launched) are left out."""
        found: dict[str, ChildSnapshot] = {}
        for sid in subagent_ids:
            record = await self._record(sid)
            if record is not None:
                found[sid] = self._supervisor.snapshot(record)
        return found

    async def wait_finished(self, subagent_ids: Sequence[str]) -> None:
        """Return once every one of these children is in a terminal state (unknown ones count
        as finished). Cancelling the wait leaves the children running."""
        for sid in subagent_ids:
            record = self._supervisor.get(sid)
            if record is not None and record.result is None:
                waiter = record.waiter()
                try:
                    await waiter
                finally:
                    record.forget(waiter)

    async def result_entries(self, tasks: Sequence[tuple[int, str]], workspace: Path, *,
                             routes: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """delegate_task result entries for finished children, given as (task index, subagent
        id): what an inline call returns, with the summary budget applied (an over-long summary
        is cut and kept whole in ``workspace``). A child only the journal remembers gets the
        fields the journal keeps; one it does not know at all is an ``error`` entry.
        ``routes`` maps the ids of routed children to their route: their entries name it
        instead of the model behind it."""
        max_chars = self._supervisor.host.delegation.max_summary_chars
        items = []
        for task_index, sid in tasks:
            record = await self._record(sid)
            if record is not None and record.outcome is not None:
                item = entry(task_index, sid, record.outcome)
            elif record is not None and record.result is not None:
                item = entry_from_result(task_index, sid, record.result)
            else:
                item = {"task_index": task_index, "subagent_id": sid, "status": "error", "summary": None,
                        "error": "the subagent's result is no longer available"}
            if record is not None:
                item["role"] = record.handle.role
            with_route(item, (routes or {}).get(sid))
            if len(item.get("summary") or "") > max_chars:
                item = await asyncio.to_thread(apply_summary_budget, item, max_chars, workspace)
            items.append(item)
        return items

    async def relaunch(self, parent: AgentSession, parent_turn_id: str, specs: Sequence[ChildSpec]) -> list[str]:
        """Launch children for these tasks again (new ids), as delegate_task would from
        ``parent``'s turn ``parent_turn_id``, each on its route again; returns their ids once
        they are journaled. Raises `SubagentLifecycleError` (and starts nothing) when a task's
        route can no longer be resolved."""
        host = self._supervisor.host
        routes: list[ChildRoute | None] = []
        for spec in specs:
            if spec.route is None:
                routes.append(None)
                continue
            try:
                routes.append(host.routing.resolve(spec.backend or "default", spec.route, host.tools.toolsets()))
            except (RouteRefused, BackendUnavailable) as exc:
                raise SubagentLifecycleError(f"cannot run {spec.goal[:60]!r} again: {exc}") from None
        records = await self._supervisor.submit(parent, parent_turn_id, list(specs), durable=True, routes=routes)
        return [r.handle.subagent_id for r in records]

    async def _record(self, subagent_id: str) -> Record | None:
        supervisor = self._supervisor
        record = supervisor.get(subagent_id)
        if record is not None:
            return record
        row = await supervisor.journal.get(subagent_id)
        if row is None:
            return None
        try:
            record = Record.from_journal(row)
        except (ValueError, SubagentLifecycleError):
            log.error("journal record of %s is unreadable", subagent_id)
            return None
        supervisor.remember(record)
        return record
