"""`HostView`: what the process hosting the lifecycle (the gateway) sees of children.

Everything it returns is a frozen `ChildSnapshot`, a number or plain data, taken
at the call; no lifecycle state leaves through it. Its actions stop a session's
children (``/stop``, ``/new``) and launch children again for a host that
delivers background delegations itself (``/retry``, resuming after a restart).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import AgentSession, ToolTraceEntry
from agent._compaction import equal_share
from agent._token_estimate import weight
from lifecycle._children import ChildSpec
from lifecycle._contract import SubagentLifecycleError, SubagentResult
from lifecycle._entries import (
    apply_summary_budget,
    entry,
    entry_from_result,
    routed,
    share_error,
    unavailable_entry,
)
from lifecycle._record import Record
from lifecycle._routing import BackendUnavailable, ChildRoute, RouteRefused
from lifecycle._snapshot import ChildSnapshot
from lifecycle._supervisor import CLOSED
from lifecycle._tallies import RECENT_PER_SESSION

if TYPE_CHECKING:
    from lifecycle._supervisor import Supervisor

log = logging.getLogger("lifecycle.host_view")

SHARED_SUMMARY_FLOOR = 500
"""The least a summary is cut to when a batch's entries share a total (`_text_limits`): the marker saying
where the full text is, and a start to tell what the child found. Fifty children keep 25,000 characters so,
whatever the total: a total too small for every entry at its floors is overrun (see `_text_limits`)."""
SHARED_ERROR_FLOOR = 300
"""The least an error is cut to, its note of what it leaves out included, when a batch's entries share a total:
its kind (``model request failed (rate_limited): …``) and the start of its detail."""
ACTIVITY_WAIT = 2.0
"""How long ``/agents`` waits for the engine to look again at what the children do (`HostView.children_now`):
past it, the listing goes out with the last look, saying how old it is."""
CUT_FIELDS = 200
"""Characters a summary cut adds to its entry besides the summary (``summary_truncated``, its original length, the
path of its full text), kept aside for each entry when a batch's summaries share a total."""


class HostView:
    """Get it from `AsyncSubagentLifecycle.host_view()`; use it on the service's event loop."""

    __slots__ = ("_supervisor",)

    RECENT_KEPT = RECENT_PER_SESSION
    """A session's latest finished children whose tool calls `tool_trace` still finds (each for
    ``lifecycle.retention_seconds``)."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor

    def children(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        """The session's live (non-terminal) children, in launch order."""
        supervisor = self._supervisor
        return tuple(supervisor.snapshot(r) for r in supervisor.children(parent_session_id))

    async def children_now(self, parent_session_id: str, *,
                           timeout: float = ACTIVITY_WAIT) -> tuple[ChildSnapshot, ...]:
        """`children`, once an engine that reads their activity from where they run (Temporal's: an engine with
        ``refresh_activity``) has looked again, for at most ``timeout`` seconds: what ``/agents`` lists. `children`
        answers at once with the last look, as old as the last time anyone asked; one not looked at in time says
        how old it is."""
        supervisor = self._supervisor
        refresh = getattr(supervisor.engine, "refresh_activity", None)
        if refresh is not None and (records := supervisor.children(parent_session_id)):
            await refresh([r.handle.subagent_id for r in records], timeout=timeout)
        return self.children(parent_session_id)

    def sessions_with_children(self) -> tuple[str, ...]:
        """The ids of the top-level sessions with live children, however the host holds them:
        loaded or not, of a generation replaced since (``/new``), or read back from the journal
        after a restart with the children still running on their engine. Each once, in the
        order of their earliest child still held (launched, or adopted after a restart)."""
        return tuple(self._supervisor.parents())

    def recent(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        """The session's last 10 finished children, oldest first; each is forgotten once it is
        older than ``lifecycle.retention_seconds``."""
        return self._supervisor.tallies.recent(parent_session_id)

    def turn_progress(self, parent_session_id: str, turn_id: str) -> tuple[int, int]:
        """(finished, launched) children of one parent turn while any of them runs; (0, 0)
        before the first launch and once all have finished."""
        return self._supervisor.tallies.turn_progress(parent_session_id, turn_id)

    def runs_here(self, parent_session_id: str, turn_id: str) -> bool:
        """Whether a live child the parent turn launched, or one of that child's own, runs in this
        process (on the in-process engine, or inline on another): code of the turn's own that could
        bring the process down while the turn itself only waits."""
        supervisor = self._supervisor
        here = supervisor.engine.runs_here
        launched = [r for r in supervisor.children(parent_session_id) if r.turn_id == turn_id]
        return any((here or r.inline) and r.live for r in supervisor.with_descendants(launched))

    async def interrupt_children(self, parent_session_id: str, reason: str, *,
                                 sparing_turns: Collection[str] = ()) -> int:
        """Interrupt every live child of the session: each ends INTERRUPTED with the partial
        output it had (``reason`` as its error), a queued one at once, a running one at its
        next safe boundary, and so do their own children (an orchestrator's). Returns how many
        it stopped, nested ones included: children already finishing, or finished, are not
        counted. Returns before the running ones have stopped. ``sparing_turns``: the children
        these parent turns launched are left running (a stop sent before the messages they answer).
        After `close` it stops nothing (0): see `Supervisor.interrupt`."""
        supervisor = self._supervisor
        children = [r for r in supervisor.children(parent_session_id) if r.turn_id not in sparing_turns]
        return await supervisor.interrupt(supervisor.with_descendants(children), reason)

    async def interrupt_turn(self, parent_session_id: str, turn_id: str, reason: str) -> int:
        """`interrupt_children` for the live children one turn of the session launched (the
        operator console's Stop of a turn). Returns how many it stopped, nested ones included."""
        supervisor = self._supervisor
        return await supervisor.interrupt(supervisor.with_descendants(
            [r for r in supervisor.children(parent_session_id) if r.turn_id == turn_id]), reason)

    async def interrupt_child(self, subagent_id: str, reason: str, *, parent_session_id: str | None = None,
                              unless_stopping: bool = False) -> bool:
        """Interrupt one live child (``/agents stop``, the operator console's Stop): it ends
        INTERRUPTED with the partial output it had and ``reason`` as its error, exactly as
        `interrupt_children` ends each of a session's children, and whoever waits for it (a
        tool, a background delivery) still gets that result; its own children stop with it.
        With ``parent_session_id``, only a child of that session. False when there is no such
        child live in this process (unknown, finished or already finishing), and after `close`.
        With ``unless_stopping``, False too for a child already asked to stop (before a restart,
        or by this start, as an inline delegate_task's orphan): that stop stands, and is not
        counted again. Returns before a running one has stopped."""
        supervisor = self._supervisor
        record = supervisor.get(subagent_id)
        if not isinstance(record, Record):  # unknown, or only its result is left
            return False
        if parent_session_id is not None and record.handle.parent_session_id != parent_session_id:
            return False
        if unless_stopping and record.stop_request is not None:
            return False
        return await supervisor.interrupt([record], reason) == 1

    async def stops_committed(self) -> bool:
        """Wait until every stop asked so far (`interrupt_children`, `interrupt_turn`, `interrupt_child`) is
        committed to the journal, as a `cancel` waits for its own: call it after a stop and before telling a person
        "stopped". True once committed; False when the journal could not commit (the database held by another
        connection past its busy timeout, a full disk, the service closed meanwhile): the children are being
        stopped all the same and the journal writes the stops once it can, but until then a crash would leave them
        INTERRUPTED by process exit, as lost ones a host may run again. Logged, never raised; a later call
        answers True once they are written. The interrupts do not wait themselves: their other callers tell
        nobody, and must not wait for the commit of a launch their stop reached while it was being journaled."""
        return await self._supervisor.stops_committed()

    def tool_trace(self, parent_session_id: str, subagent_id: str) -> tuple[ToolTraceEntry, ...] | None:
        """The child's latest tool calls, oldest first, metadata only: live from its engine
        (when the engine can tell), or as it finished while this process remembers it. None
        when it is not the session's child, its engine does not report them while it runs (nor while it
        waits for a slot), or they are no longer kept: it left the session's `recent` children, or ran before a
        restart."""
        supervisor = self._supervisor
        record = supervisor.get(subagent_id)
        if isinstance(record, Record) and record.handle.parent_session_id == parent_session_id:
            if record.outcome is not None:
                return record.outcome.tool_trace
            live = getattr(supervisor.engine, "tool_trace", None)
            if live is not None and not record.state.terminal:
                return live(subagent_id)
        for child in supervisor.tallies.recent(parent_session_id):
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
        as finished). Cancelling the wait leaves the children running. After `close`, raises
        `SubagentLifecycleError` (``CLOSED``) for a child the service still holds unfinished, at once
        or as the close ends: nothing will tell this process how it ends (see `_wait`)."""
        await self._wait([self._supervisor.get(sid) for sid in subagent_ids])

    async def finished_entries(self, tasks: Sequence[tuple[int, str]], workspace: Path, *,
                               routes: Mapping[str, str] | None = None, folder: str | None = None,
                               total_tokens: int | None = None) -> list[dict[str, Any]]:
        """Wait until these children, given as (task index, subagent id), have finished, then
        their delegate_task result entries: what an inline call returns, with the summary
        budget applied (an over-long summary is cut and kept whole in ``workspace``, under
        ``folder``: see `apply_summary_budget`). A child
        that finished before the call, or before a restart, gets the fields the journal keeps
        (no tool trace); one nothing remembers is an ``error`` entry. ``routes`` maps the ids
        of routed children to their route: their entries name it instead of the model behind
        it, also in their errors (`routed`). ``total_tokens``: the most the entries may come to together
        (by the agent's estimate), over which their summaries and errors share it (`_text_limits`), a
        summary cut beyond its share as the summary budget cuts it, an error saying how much it leaves out;
        none is cut below its floor (`SHARED_SUMMARY_FLOOR`, `SHARED_ERROR_FLOOR`), so a total too small
        for that many entries is overrun. Cancelling the wait leaves the children running; after `close`,
        raises as `wait_finished` does."""
        held = [self._supervisor.get(sid) for _, sid in tasks]
        await self._wait(held)  # holding the live records keeps their full outcomes readable
        max_chars = self._supervisor.host.delegation.max_summary_chars
        items = []
        for (task_index, sid), item in zip(tasks, held, strict=True):
            provider = None
            if isinstance(item, Record) and item.outcome is not None:
                entry_ = entry(task_index, sid, item.outcome)
                entry_["role"], provider = item.handle.role, item.handle.provider
            elif (result := await self._result(sid, item)) is not None:
                entry_ = entry_from_result(task_index, sid, result)
                entry_["role"], provider = result.handle.role, result.handle.provider
            else:
                entry_ = unavailable_entry(task_index, sid)
            if routes:
                routed(entry_, routes.get(sid), provider)
            items.append(entry_)
        if total_tokens is None:
            limits = [(max_chars, None)] * len(items)
        else:
            limits = _text_limits(items, max_chars, total_tokens)
        for at, (limit, error_limit) in enumerate(limits):
            if error_limit is not None:
                share_error(items[at], error_limit)
            if len(items[at].get("summary") or "") > limit:
                items[at] = await asyncio.to_thread(apply_summary_budget, items[at], limit, workspace, folder,
                                                    shared=limit < max_chars)
        return items

    def keep_results_since(self, since: Callable[[], float | None]) -> None:
        """Have the retention sweep spare the journaled results of every child that finished at or
        after ``since()`` (epoch seconds on the service's clock; None: spare none beyond
        ``lifecycle.retention_seconds``), asked at each sweep: a host that delivers background
        results later (`finished_entries`, after a restart too) names the dispatch time of the oldest
        delegation it has not delivered, whose first children may have finished long before its last.
        Replaces an earlier ``since``."""
        self._supervisor.results_needed_since = since

    async def relaunch(self, parent: AgentSession, parent_turn_id: str, specs: Sequence[ChildSpec], *,
                       before_commit: Callable[[Sequence[str]], None] | None = None) -> list[str]:
        """Launch children for these tasks again (new ids), as delegate_task would from
        ``parent``'s turn ``parent_turn_id``, each on its route again; returns their ids once
        they are journaled. Raises `SubagentLifecycleError` (and starts nothing) when a task's
        route can no longer be resolved, and the journal's `JournalError` when it refused the launch
        (nothing of it was kept). ``before_commit(ids)``, with the new ids in the order of ``specs``, is
        called once their PENDING rows are put, before their commit, and must not raise: what it writes
        to the journal's database commits in the same transaction (the host's record of the relaunch,
        which a crash or a full disk between two commits left without its children, or them without it).
        It is not called when nothing was launched; when it was and this raises, the launch was not
        recorded (its caller then undoes what it wrote), or its caller was cancelled meanwhile."""
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
        hook = None if before_commit is None else lambda records: before_commit([r.handle.subagent_id for r in records])
        records = await self._supervisor.submit(parent, parent_turn_id, list(specs), durable=True, routes=routes,
                                                before_commit=hook)
        return [r.handle.subagent_id for r in records]

    async def _wait(self, held: Sequence[Record | SubagentResult | None]) -> None:
        """Wait for the held records to finish. After `close` one unfinished raises ``CLOSED``: its end would
        never be heard (a child on an engine that outlives the process, or left behind by the close's grace),
        and a host told it finished would deliver a result it has not got. The next start follows it again."""
        supervisor = self._supervisor
        for record in held:
            if isinstance(record, Record) and record.result is None:
                if not supervisor.sealed:
                    waiter = record.waiter()
                    try:
                        await waiter  # woken by the close too (`Supervisor.end_waits`)
                    finally:
                        record.forget(waiter)
                if record.result is None:
                    raise SubagentLifecycleError(CLOSED, code="CLOSED")

    async def _result(self, subagent_id: str, held: Record | SubagentResult | None) -> SubagentResult | None:
        if isinstance(held, Record):
            return held.result
        if isinstance(held, SubagentResult):
            return held
        record = await self._journaled(subagent_id)
        return None if record is None else record.result

    async def _record(self, subagent_id: str) -> Record | None:
        """A live child's record, else one read back from the journal (finished, or a
        stopped process's)."""
        item = self._supervisor.get(subagent_id)
        return item if isinstance(item, Record) else await self._journaled(subagent_id)

    async def _journaled(self, subagent_id: str) -> Record | None:
        supervisor = self._supervisor
        if supervisor.sealed:  # the journal is closed: only the children still held are known
            return None
        row = await supervisor.journal.get(subagent_id)
        if row is None:
            return None
        try:
            record = Record.from_journal(row)
            if row.result is not None:  # a finished child: what it ended with
                record.result = SubagentResult.from_dict(json.loads(row.result))
                record.completed_at = row.completed_at
        except (ValueError, SubagentLifecycleError):
            log.error("journal record of %s is unreadable", subagent_id)
            return None
        return record


def _text_limits(items: Sequence[dict[str, Any]], max_chars: int, total_tokens: int
                 ) -> list[tuple[int, int | None]]:
    """Characters each entry's summary and error may keep (its marker or note included; None: the error as it
    is) for ``items`` to come to at most ``total_tokens`` together as JSON (by `weight`, as compaction counts
    them), each summary at most ``max_chars``. Within it with their summaries at ``max_chars``, nothing else
    changes. Over it, their tool traces are left out first (counted in ``tool_trace_omitted``: which tools a
    child called matters less than what it found), then their summaries and errors share what the other fields
    leave equally, the shorter keeping theirs whole, none cut below its floor (`SHARED_SUMMARY_FLOOR`,
    `SHARED_ERROR_FLOOR`): past that many entries, the total is overrun by what the floors keep (fifty
    children at both: 40,000 characters, and their other fields), a start of each being worth more to the
    parent than a total no model window has."""
    budget = 8 * total_tokens
    summaries = [(item.get("summary") or "")[:max_chars] for item in items]
    errors = [item.get("error") or "" for item in items]
    texts = [weight(json.dumps(text, ensure_ascii=False)) for text in summaries + errors]
    rest = [weight(json.dumps({**item, "summary": None, "error": None}, ensure_ascii=False)) for item in items]
    if sum(rest) + sum(texts) <= budget:
        return [(max_chars, None)] * len(items)
    for at, item in enumerate(items):
        if item.get("tool_trace"):
            item["tool_trace_omitted"] = item.get("tool_trace_omitted", 0) + len(item["tool_trace"])
            item["tool_trace"] = []
            rest[at] = weight(json.dumps({**item, "summary": None, "error": None}, ensure_ascii=False))
    share = equal_share(texts, budget - sum(rest) - 2 * CUT_FIELDS * len(items))

    def limit(text: str, eighths: int, floor: int) -> int | None:
        # A share in eighths of a token becomes characters of that text at its own rate: four characters a
        # token of English, about one of Chinese.
        return None if eighths <= share else max(floor, len(text) * share // eighths)

    count = len(items)
    kept = [limit(text, eighths, SHARED_SUMMARY_FLOOR) for text, eighths in zip(summaries, texts[:count], strict=True)]
    cut = [limit(text, eighths, SHARED_ERROR_FLOOR) for text, eighths in zip(errors, texts[count:], strict=True)]
    # Never over ``max_chars``: the floor is no licence to give more than a user's smaller budget.
    return [(max_chars if k is None else min(k, max_chars), e) for k, e in zip(kept, cut, strict=True)]
