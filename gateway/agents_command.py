"""``/agents``: the chat's children, and control over one of them.

- ``/agents`` lists the session's running children and its recent ones — id, goal,
  state, elapsed time, current activity, and its model (its route instead, for a routed child) — with its latest
  background delegations (also after a restart). At most `SHOWN` children are listed,
  the rest counted by state, so a fan-out of fifty stays one readable message;
  ``/agents all`` lists every one.
- ``/agents log ID`` shows a child's latest tool calls: metadata only (tool, argument
  names, sizes, outcome, duration), at most `LOG_LINES`.
- ``/agents stop ID`` stops one running child; its partial result still reaches
  whatever waits for it. Answered once the stop is committed to the journal (`STOP_NOT_SAVED` if
  it could not be).
- ``/agents retry ID`` runs a failed or interrupted child's task again; the result
  arrives as a message. Not while a child runs that task already (a retry asked twice, or
  ``/retry``'s): the task would run twice, and its result come twice.

``ID`` is a child's id as listed, or any part of it that matches only one child, in any case. A whole id
matches only itself: another chat's, or one no longer remembered, is not a part of one of this chat's.

At a chat's top level, its threads (or forum topics) are sessions of their own, which ``/agents`` there neither lists
nor acts on (`Threads`): it counts their subagents instead, and names the thread of one asked for by its id, with
the command to send there. On Slack, which takes slash commands only at a channel's top level while every
conversation runs in a thread, that is where ``/agents`` is typed.

Every answer is redacted as a log line is (`gateway.logging.redact`): a child's error or summary
may quote what a tool echoed (a key in a URL, a token in an exception), and a goal what the
model was told. Goals, summaries and errors are redacted before they are cut (`_shown`), so a
cut never leaves the first half of a secret, which no mask would match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from agent import Clock, ToolTraceEntry
from gateway.child_states import RESTARTED, state_word, tally
from gateway.excerpt import excerpt, typed
from gateway.ledger import FAILED, LOOKBACK, Ledger
from gateway.logging import redact, redacted_cut
from gateway.notices import format_elapsed
from gateway.replies import SILENCE, child_failure_reason
from gateway.sessions import GatewaySession
from gateway.store import DelegationRow
from gateway.store.delegations import DELIVERY_FAILED
from lifecycle import ChildSnapshot, ChildSpec, HostView, SubagentState

LOG_LINES = 20
SHOWN = 12
"""Children ``/agents`` lists (running ones first); the others are counted by state, per block."""
AT_WORK = frozenset(s.value.lower() for s in (SubagentState.STARTING, SubagentState.RUNNING,
                                                SubagentState.CANCEL_REQUESTED))
"""The state words of children at work: listed first (`_listed`)."""
MIN_ID_PART = 3
WHOLE_ID = re.compile(r"sa-[0-9a-f]{13,}")
"""A child's whole id (`agent.new_id`: ``sa-``, the process's 12 hex digits, then its count in hex). It names
that child only: it also begins the ids counted after it (``sa-…5`` begins ``sa-…5a``), which are other children."""
LISTED_DELEGATIONS = 3
"""The latest background delegations ``/agents`` lists, with their children."""
GOAL_CHARS = 80
SUMMARY_CHARS = 160
"""A listed child's goal and summary are cut to these, on one line (`gateway.excerpt`)."""
_READ = 8
"""`_shown` redacts this many times the limit of a text, twice what `excerpt` reads of it."""
NO_SUBAGENTS = "No subagents in this chat."
NONE_HERE = "No subagents here."
"""Instead of `NO_SUBAGENTS` at a chat's top level while its threads have subagents (`Threads`)."""
USAGE = "Usage: /agents, /agents log ID, /agents stop ID, /agents retry ID (ID as listed, or a unique part of it)."
STOP_NOT_SAVED = ("the stop is not saved yet (the state database cannot be written): if the gateway restarts "
                  "before it is, it may run again.")
"""``/agents stop``'s word when the journal could not commit the stop (`HostView.stops_committed`), as /stop's."""
SAME_TASK = ("goal", "context", "role", "route", "backend")
"""What a retry runs again (`Ledger.retry_one`): two children alike in these, and in their place
in their ``delegate_task`` call, run one task."""
Item = tuple[Callable[[], str], str]
"""A listed child: its line, made only if it is shown (its redacted cuts cost up to a millisecond for a long summary,
and a block may hold hundreds of children), and its state word, which counts it when it is not."""


@dataclass(frozen=True, slots=True)
class Threads:
    """At a chat's top level, the sessions of its threads (or forum topics) in memory, each a session of its own
    that ``/agents`` there neither lists nor acts on, and how the chat names them."""

    sessions: Sequence[GatewaySession]
    thread: str
    """What the platform calls a thread of a chat: ``thread``, or ``topic`` on Telegram."""
    agents: str
    """How ``/agents`` is typed in one: ``!agents`` on Slack, which takes no slash command in a thread."""


class AgentsCommand:
    def __init__(self, children: HostView, ledger: Ledger, clock: Clock) -> None:
        self._children = children
        self._ledger = ledger
        self._clock = clock
        self._since = clock.time()
        """Built before the lifecycle starts: a child that finished before this ran in an earlier process."""

    async def run(self, session: GatewaySession, args: str, *, threads: Threads | None = None) -> str:
        """``threads``: at a chat's top level, its threads' sessions. Their subagents are counted after a listing,
        and instead of "in this chat" when there is nothing here (`_in_threads`); one named by its id, which
        nothing here matches, is said to be theirs, with the command to send in its thread (`_theirs`)."""
        # Texts pieced in whole (a ledger's reason, a retry's answer) are masked here; cut ones in `_shown`.
        return redact(await self._run(session, args, threads))

    async def _run(self, session: GatewaySession, args: str, threads: Threads | None) -> str:
        words = args.split()
        if not words or [w.lower() for w in words] == ["all"]:
            listed = await self._list(session, everything=bool(words))
            if threads is None or (elsewhere := self._in_threads(threads)) is None:
                return listed
            return f"{NONE_HERE} {elsewhere}" if listed == NO_SUBAGENTS else f"{listed}\n{elsewhere}"
        action = words[0].lower()  # phone keyboards capitalise
        if len(words) != 2 or action not in ("log", "stop", "retry"):
            return USAGE
        wanted = words[1]
        # Not one of this session's, but a thread's: else "No subagent sa-… in this session: /agents lists them." of
        # an id read in the thread's listing, while /agents here lists none of it.
        if threads is not None and not _matching(self._known(session), wanted) \
                and (theirs := self._theirs(threads, wanted)) is not None:
            return (f"{theirs} is a subagent of a {threads.thread} of this chat, which /agents here does not reach: "
                    f"send {threads.agents} {action} {theirs} in that {threads.thread}.")
        found = await self._find(session, wanted)
        if found == NO_SUBAGENTS and threads is not None and (elsewhere := self._in_threads(threads)) is not None:
            return f"{NONE_HERE} {elsewhere}"
        if isinstance(found, str):
            return found
        if action == "log":
            return self._log(session, found)
        if action == "stop":
            return await self._stop(session, found)
        return await self._retry(session, found)

    # -- listing ---------------------------------------------------------------------------

    async def _list(self, session: GatewaySession, *, everything: bool = False) -> str:
        # Asked again where they run (on Temporal), for at most 2 s: else what Temporal said at the last look.
        live = {c.subagent_id: c for c in await self._children.children_now(session.session_id)}
        now = self._clock.time()  # after the wait, as the snapshots are
        delegations: list[tuple[str, list[Item]]] = []
        listed: set[str] = set()
        for row, found in await self._ledger.listing(session, LISTED_DELEGATIONS):
            if all(t.subagent_id in live for t in row.tasks):
                continue  # still running: listed with the other running children
            items = []
            for task in row.tasks:
                listed.add(task.subagent_id)
                if task.subagent_id in live:  # one still at work: listed here, with its elapsed time and activity
                    items.append(_item(live[task.subagent_id], now))
                    continue
                child = found.get(task.subagent_id)
                items.append((partial(_task_line, task.subagent_id, task.goal, task.spec.get("route"), child),
                               state_word(child)))
            delegations.append((f"Background task {row.delegation_id} ({_ledger_status(row)}):", items))
        blocks = [("", [_item(child, now) for sid, child in live.items() if sid not in listed]), *delegations]
        listed.update(live)
        recent = [c for c in self._children.recent(session.session_id) if c.subagent_id not in listed]
        if recent:
            blocks.append(("Finished recently:", [_item(child, now) for child in reversed(recent)]))
        lines, listing, cut = [], None if everything else _listed(blocks), False
        for b, (head, items) in enumerate(blocks):
            if head:
                lines.append(head)
            lines += [line() for i, (line, _) in enumerate(items) if listing is None or (b, i) in listing]
            if more := [state for i, (_, state) in enumerate(items) if listing is not None and (b, i) not in listing]:
                cut = True
                lines.append(f"… and {len(more)} more: {tally(more)}")
        if cut:
            lines.append("/agents all lists every one.")
        return "\n".join(lines) if lines else NO_SUBAGENTS

    # -- one child -----------------------------------------------------------------------------

    async def _find(self, session: GatewaySession, wanted: str) -> ChildSnapshot | str:
        """The session's child whose id is ``wanted`` or holds it, or a sentence saying why none."""
        known = self._known(session)
        if not known:  # no id could be found: asking for more of it would send the user looking
            return NO_SUBAGENTS
        if len(wanted) < MIN_ID_PART and wanted.lower() not in {s.lower() for s in known}:
            return f"Give more of the id than {wanted!r}: /agents lists the ids."
        matches = _matching(known, wanted)
        if not matches:
            return f"No subagent {typed(wanted)} in this session: /agents lists them."
        if len(matches) > 1:
            return f"{typed(wanted)} matches {len(matches)} subagents ({', '.join(matches[:5])}); give more of the id."
        child = known[matches[0]]
        if child is None:  # only the ledger names it: read it back (from the journal after a restart)
            child = (await self._children.lookup(matches)).get(matches[0])
        return child if child is not None else f"Subagent {matches[0]} is no longer remembered."

    def _known(self, session: GatewaySession, lookback: int = LOOKBACK) -> dict[str, ChildSnapshot | None]:
        """The ids of the session's children, live, finished recently, and of its latest ``lookback`` background
        delegations (by default as far back as a retry finds its task), with their snapshots where at hand."""
        sid = session.session_id
        known: dict[str, ChildSnapshot | None] = {}
        for child in (*self._children.recent(sid), *self._children.children(sid)):
            known[child.subagent_id] = child
        for row in self._ledger.latest(session, lookback):
            for task in row.tasks:
                known.setdefault(task.subagent_id, None)
        return known

    def _theirs(self, threads: Threads, wanted: str) -> str | None:
        """The id of the one subagent of the threads that ``wanted`` names, as `_find` matches it; None if none
        does, or more than one."""
        known = [sid for other in threads.sessions for sid in self._known(other)]
        matches = _matching(known, wanted) if len(wanted) >= MIN_ID_PART else []
        return matches[0] if len(matches) == 1 else None

    def _in_threads(self, threads: Threads) -> str | None:
        """What ``/agents`` at a chat's top level says of the subagents of its threads that an ``/agents`` there
        lists, at work or that ran (finished recently, or of its latest background tasks): else "No subagents in
        this chat." beside a thread's. None when no thread has one."""
        working = ran = places = 0
        for other in threads.sessions:
            live = {c.subagent_id for c in self._children.children(other.session_id)}
            done = len(self._known(other, LISTED_DELEGATIONS).keys() - live)
            working, ran, places = working + len(live), ran + done, places + bool(live or done)
        if not places:
            return None
        said = [f"{counted(working, 'subagent')} {'works' if working == 1 else 'work'}"] if working else []
        if ran:
            said.append(f"{ran} ran" if working else f"{counted(ran, 'subagent')} ran")
        where = f"{' and '.join(said)} in {counted(places, threads.thread)} of this chat, which /agents here does " \
                f"not reach: send {threads.agents} in"
        if places > 1:
            return f"{where} a {threads.thread} to list its own."
        return f"{where} that {threads.thread} to list {'it' if working + ran == 1 else 'them'}."

    def _log(self, session: GatewaySession, child: ChildSnapshot) -> str:
        trace = self._children.tool_trace(session.session_id, child.subagent_id)
        head = f"{child.subagent_id} — {_shown(child.goal, GOAL_CHARS)} — {state_word(child)}"
        if trace is None:
            return f"{head}\n{self._untraced(child)}"
        if not trace:
            return f"{head}\nNo tool calls yet."
        shown = trace[-LOG_LINES:]
        more = f" (the latest {len(shown)} of {len(trace)})" if len(trace) > len(shown) else ""
        return "\n".join([f"{head}\nTool calls{more}, oldest first:", *(_trace_line(e) for e in shown)])

    def _untraced(self, child: ChildSnapshot) -> str:
        """Why a child's tool calls cannot be shown (`HostView.tool_trace` said None)."""
        if not child.state.terminal:  # waiting for a slot, or on an engine that reports them only at the end
            return "Its tool calls are not known here until it has finished."
        if state_word(child) == RESTARTED or (child.completed_at or 0.0) < self._since:
            return "Its tool calls are no longer kept (the gateway restarted since it ran)."
        # Dropped out of the session's recent children (`HostView.recent`): by number or by age.
        return (f"Its tool calls are no longer kept: only this chat's last {HostView.RECENT_KEPT} finished subagents "
                "keep theirs, each for a while after it finished.")

    async def _stop(self, session: GatewaySession, child: ChildSnapshot) -> str:
        if child.state.terminal:
            return f"{child.subagent_id} is not running: it {state_word(child)}."
        if not await self._children.interrupt_child(child.subagent_id, "stopped by /agents stop",
                                                   parent_session_id=session.session_id):
            return f"{child.subagent_id} is already finishing."
        # Answered once the stop is committed, as /stop is: said while it was only queued, a crash right after
        # left the child running in the journal, lost to the restart, and on_restart: resume ran it again.
        if not await self._children.stops_committed():
            return (f"Stopping {child.subagent_id} ({_shown(child.goal, GOAL_CHARS)}), but {STOP_NOT_SAVED} It ends "
                    "at its next step, and its partial result still reaches whatever waits for it.")
        return (f"Stopping {child.subagent_id} ({_shown(child.goal, GOAL_CHARS)}): it ends at its next step, "
                "and its partial result still reaches whatever waits for it.")

    async def _retry(self, session: GatewaySession, child: ChildSnapshot) -> str:
        if not child.state.terminal:
            return f"Nothing to retry: {child.subagent_id} has not ended yet ({state_word(child)})."
        if child.state not in FAILED:
            return f"Nothing to retry: {child.subagent_id} {state_word(child)}."
        known = self._ledger.task_of(session, child.subagent_id)
        if known is None and child.task is None:
            return f"{child.subagent_id} cannot be run again: its task is no longer known (it ran before a restart)."
        # Asked again (a double tap, the message sent again, or after /retry) it would run the task twice.
        task = _task_of(known[1].spec, known[1].task_index) if known is not None else _task_of(
            _fields_of(child.task), child.task.task_index)
        again = next((c for c in self._children.children(session.session_id)
                      if c.task is not None and _task_of(_fields_of(c.task), c.task.task_index) == task), None)
        if again is not None:
            return (f"Nothing to retry yet: {child.subagent_id}'s task is running again, as {again.subagent_id} "
                    f"({state_word(again)}).")
        origin = known[0].origin_turn_id if known is not None else child.parent_turn_id
        return await self._ledger.retry_one(session, child.subagent_id, child.task, origin)


def _listed(blocks: list[tuple[str, list[Item]]]) -> set[tuple[int, int]]:
    """Which `SHOWN` children a listing of more names, as (block, item) places: those at work first, then the
    others, each in the blocks' order. In that order alone, a fan-out past `lifecycle.max_running` (hundreds
    waiting for a slot) filled the listing with waiting ones and only counted those at work."""
    places = [(b, i) for b, (_, items) in enumerate(blocks) for i in range(len(items))]
    places.sort(key=lambda at: blocks[at[0]][1][at[1]][1] not in AT_WORK)
    return set(places[:SHOWN])


def _matching(known: Iterable[str], wanted: str) -> list[str]:
    """The ids of ``known`` that ``wanted`` names: the one it is, in any case (caps lock, an id read out), else those
    it is a part of, unless it is a whole id: another chat's, taken as a part, stopped the child it begins."""
    folded, key = {s.lower(): s for s in known}, wanted.lower()
    if key in folded:
        return [folded[key]]
    return [] if WHOLE_ID.fullmatch(key) else [s for f, s in folded.items() if key in f]


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: ``2 subagents``, ``1 thread``."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _task_of(spec: Mapping[str, Any], task_index: int) -> tuple[object, ...]:
    return (*(spec.get(name) for name in SAME_TASK), task_index)


def _fields_of(task: ChildSpec) -> dict[str, Any]:
    return {name: getattr(task, name) for name in SAME_TASK}


def _item(child: ChildSnapshot, now: float) -> Item:
    return partial(_line, child, now), state_word(child)


def _task_line(subagent_id: str, goal: str, route: str | None, child: ChildSnapshot | None) -> str:
    """A background delegation's child as its ledger row and its snapshot (None: nothing remembers it) tell."""
    text = (child.summary or child_failure_reason(child.error or "")) if child is not None else ""
    where = f", route {route}" if route else ""
    return (f"• {subagent_id} — {_shown(goal, GOAL_CHARS)} — {state_word(child)}{where}"
            + (f": {_shown(text, SUMMARY_CHARS)}" if text else ""))


def _line(child: ChildSnapshot, now: float) -> str:
    end = child.completed_at if child.completed_at is not None else now
    elapsed = format_elapsed(max(0.0, end - (child.started_at or child.created_at)))  # as the progress card reads
    state = state_word(child)
    text = f"• {child.subagent_id} — {_shown(child.goal, GOAL_CHARS)} — {state}, {elapsed}"
    activity = None if child.state.terminal else child.activity  # a finished one's is "finished": its state says so
    text += "".join(f", {part}" for part in (activity, *_model_route(child)) if part and part != state)
    done = child.summary or child_failure_reason(child.error or "") if child.state.terminal else None
    return text + (f": {_shown(done, SUMMARY_CHARS)}" if done else "")


def _shown(text: str, limit: int) -> str:
    """`excerpt` of ``text`` with secrets masked first (`redacted_cut`). Only twice what `excerpt` reads
    of it is masked (a child's summary may be 24,000 characters, fifty of them for ``/agents all``)."""
    return redacted_cut(text, limit, excerpt, read=_READ * limit)


def _model_route(child: ChildSnapshot) -> Iterable[str]:
    """A routed child's route, never the model behind it (as delegate_task's results and ``/delegation``
    show it): listed with it, a route's model reached the chat, from whom the route is to hide it."""
    if child.route:
        yield f"route {child.route}"
    elif child.model:
        yield f"model {child.model}"


def _trace_line(entry: ToolTraceEntry) -> str:
    keys = ", ".join(entry.argument_keys) or "no arguments"
    outcome = "ok" if entry.ok else "failed"
    return (f"• {entry.name} ({keys}) — {outcome}, {entry.duration_seconds:.1f} s, "
            f"{entry.input_bytes} B in, {entry.output_bytes} B out")


def _ledger_status(row: DelegationRow) -> str:
    if row.status == "running":
        return "running"
    if row.status == "delivered":
        # The model could not take them (its completion turn failed `inbox.max_attempts` times): the chat got them.
        return "results sent as they were" if row.reason == DELIVERY_FAILED else "results delivered"
    if row.status == "reported":
        return "interrupted by a restart"
    if row.reason == SILENCE:  # the model read them and chose to say nothing: nothing went missing
        return f"results read, nothing to tell the chat ({SILENCE})"
    return f"results not delivered ({row.reason})"

