"""What the operator console shows, read from the gateway's owners as plain JSON-ready data.

`ConsoleView.snapshot` reads, never changes: sessions (the store's most recently active,
with what memory knows of each), running work (turns running now and turns whose
children still run, each with its tree of children), background delegations (what ran
apart from what was delivered), the outbox's pending and failed parts, dead letters,
recent warnings and errors, and each platform's time since its last event. Times are
epoch seconds on the gateway's clock; ``now`` says when the snapshot was taken.

Each section is read on its own (`gateway.live_reads.LiveReads`): one whose read raises (every
read of the store does while a full disk keeps it from writing again what it rolled back) is
empty (its counts None), and ``unread`` names it with why, so the page shows all the rest and
the state database's status exactly when they matter; its WARNING is logged once, and shows
under the recent errors.

Errors and previews are masked as the log is (`gateway.logging.redact`): an error is an
exception's text as stored (an SDK's URL, with the bot token in it), which the log masks and
`/agents` does, and the page is read by whoever the console's token is shared with. Both are
cut to one line (`PREVIEW`, `ERROR` characters), between whole characters as a reader sees
them (`gateway.graphemes`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gateway import backlog
from gateway.graphemes import whole_prefix
from gateway.live_reads import LiveReads
from gateway.logging import redacted_cut
from gateway.store import DelegationRow, OutboxRow, split_session_key
from lifecycle import ChildSnapshot, JournalError

if TYPE_CHECKING:
    from gateway.app import Gateway
    from gateway.console.recent_errors import RecentErrors
    from gateway.sessions import RunningTurn

log = logging.getLogger("gateway.console")

SESSIONS = 50
DELEGATIONS = 30
MESSAGES = 50
PREVIEW = 120
ERROR = 500
"""Errors are cut to this many characters, as the outbox stores its own: a child's may hold the whole page a
proxy answered its model call with, masked again and sent to every page at each refresh."""
CLUSTER_REACH = 16
"""Code points a cut moves back to end before a cluster: a family of four with skin tones has 11."""
MAX_DEPTH = 8
FINISHED_CACHE = 2048
FINISHED_SHOWN = 100
"""Finished children listed at most under one turn (or one orchestrator), the latest to end: the lifecycle remembers
a session's last 10 (`HostView.recent`), and a busy turn's first to end, the one an operator stopped among them, left
the tree while the turn was still shown. More would make each state sent to every page as large as the turn is long."""


class ConsoleView:
    def __init__(self, gateway: Gateway, errors: RecentErrors) -> None:
        self._gateway = gateway
        self._errors = errors
        self._finished: OrderedDict[str, ChildSnapshot] = OrderedDict()
        """Snapshots of finished children: final, so read from the journal once."""
        self._chats: dict[str, str] = {}
        """The chats of the sessions not in memory last shown with children (a session's chat never changes)."""
        self._ended: OrderedDict[str, tuple[str, str]] = OrderedDict()
        """The children seen ending (`subagent_stop`), the latest last: each one's parent session and turn."""
        self._read_back: dict[str, ChildSnapshot] = {}
        """Those of `_ended` read back from the journal (final), kept while they are there: apart from `_finished`,
        whose delegations' tasks would push them out, to be read again at each refresh."""
        self._reads = LiveReads(log, "console")
        gateway.host.hooks.register("subagent_stop", self._child_ended)

    async def _child_ended(self, *, parent_session_id: str, parent_turn_id: str, child_session_id: str,
                           **_: object) -> None:
        self._ended[child_session_id] = (parent_session_id, parent_turn_id)
        self._ended.move_to_end(child_session_id)
        if len(self._ended) > FINISHED_CACHE:
            self._read_back.pop(self._ended.popitem(last=False)[0], None)

    async def snapshot(self) -> dict[str, Any]:
        g = self._gateway
        read = self._reads.read
        snapshot = {
            "now": g.clock.time(),
            "sessions": read("sessions", self._sessions, []),
            "work": await self._reads.read_async("work", self._all_work, []),
            "delegations": await self._reads.read_async("delegations", self._delegations, []),
            "outbox": await self._reads.read_async("outbox", self._outbox, {
                "pending": None, "failed": None, "dead": None, "pending_messages": [], "failed_messages": [],
                "dead_letters": []}),
            "errors": self._errors.entries(),
            "platforms": read("platforms", self._platforms, []),
            "storage": g.storage(),
        }
        snapshot["unread"] = {section: _error(f"{type(exc).__name__}: {exc}")
                              for section, exc in self._reads.failing.items()}
        return snapshot

    async def _delegations(self) -> list[dict[str, Any]]:
        return [await self._delegation(row) for row in self._gateway.store.delegations.recent(DELEGATIONS)]

    async def _outbox(self) -> dict[str, Any]:
        g = self._gateway
        store = g.store
        # Off the event loop (20-40 ms at 100,000 parts pending, up to ten times a second while a page is open).
        counts = await g.metrics.backlog.outbox_counts.read(backlog.READ_WAIT)
        return {
            **counts,
            "dead": store.dead_letters.count(),
            "pending_messages": [_message(r) for r in store.outbox.with_status("pending", MESSAGES)],
            "failed_messages": [_message(r) for r in store.outbox.with_status("failed", MESSAGES)],
            "dead_letters": [_letter(d) for d in store.dead_letters.latest(MESSAGES)],
        }

    def _platforms(self) -> list[dict[str, Any]]:
        g = self._gateway
        connections = g.connections()
        return [{"name": name, "last_inbound_age": round(age, 1),
                 "connection": connections[name].to_json() if name in connections else None}
                for name, age in g.metrics.inbound_ages().items()]

    def _sessions(self) -> list[dict[str, Any]]:
        g = self._gateway
        rows = g.store.sessions.recent(SESSIONS)
        out = []
        for row in rows:
            platform, chat_id, thread_id = split_session_key(row.key)
            live = g.sessions.find(platform, chat_id, thread_id)
            running = live.running if live is not None else None
            out.append({
                "key": row.key, "platform": platform, "chat_id": chat_id, "thread_id": thread_id,
                "session_id": row.session_id, "mode": row.mode, "generation": row.generation,
                "last_active": max(row.updated_at, live.last_active if live is not None else 0.0),
                "in_memory": live is not None, "queued": len(live.queue) + live.held if live is not None else 0,
                "running": None if running is None else {
                    "turn_id": running.turn_id, "kind": running.kind, "started_at": running.started_at,
                    "tool": running.current_tool},
            })
        return out

    async def _all_work(self) -> list[dict[str, Any]]:
        """The work of the sessions in memory, then the live children of sessions that are not:
        not loaded since a restart while their children ran on (``lifecycle.engine: temporal``),
        replaced by ``/new`` while their children wind down, or a plugin's own. Those are not
        loaded to be shown. (An idle session is let go only once no child works for it.)"""
        g = self._gateway
        ended = self._ended_by_parent()
        # A list first: a read of the journal below may let a chat start or end meanwhile.
        work = [w for s in list(g.sessions) for w in await self._work(s.session_id, s.key, s.running, ended)]
        chats: dict[str, str | None] = {}
        for session_id in g.host.children.sessions_with_children():
            if g.sessions.by_agent(session_id) is None:
                chats[session_id] = self._chats.get(session_id) or g.store.sessions.key_of(session_id)
                work.extend(await self._work(session_id, chats[session_id], None, ended))
        self._chats = {sid: key for sid, key in chats.items() if key is not None}
        return work

    def _ended_by_parent(self) -> dict[str, list[tuple[str, str]]]:
        """`_ended` by parent session: (turn, subagent id) pairs, the latest to end last."""
        by_parent: dict[str, list[tuple[str, str]]] = {}
        for subagent_id, (parent_id, turn_id) in self._ended.items():
            by_parent.setdefault(parent_id, []).append((turn_id, subagent_id))
        return by_parent

    async def _ended_of(self, parent_id: str, turn_id: str | None, live: Iterable[ChildSnapshot],
                        ended: dict[str, list[tuple[str, str]]]) -> list[ChildSnapshot]:
        """The parent's finished children (of ``turn_id`` alone, unless None), the latest `FINISHED_SHOWN` to end:
        those the lifecycle remembers, and those seen ending that it has forgotten since, read back (once)."""
        recent = [c for c in self._gateway.host.children.recent(parent_id) if turn_id in (None, c.parent_turn_id)]
        if parent_id not in ended:  # most children: none of their own seen ending (each refresh, every child)
            return recent
        known = {c.subagent_id for c in (*recent, *live)}
        missing = [sid for turn, sid in ended.get(parent_id, ()) if turn_id in (None, turn) and sid not in known]
        missing = missing[-FINISHED_SHOWN:]
        found = {sid: self._read_back[sid] for sid in missing if sid in self._read_back}
        if unread := [sid for sid in missing if sid not in found]:
            try:
                read = await self._gateway.host.children.lookup(unread)
            # The journal unreadable (a full disk; it raises JournalError for SQLite's refusal): what memory holds.
            except (sqlite3.Error, JournalError):
                read = {}
            else:
                for sid in unread:
                    if (child := read.get(sid)) is None:  # swept (`lifecycle.retention_seconds`): not read again
                        self._ended.pop(sid, None)
                    elif child.state.terminal:
                        found[sid] = self._read_back[sid] = child
        forgotten = list(found.values())
        return sorted((*forgotten, *recent), key=lambda c: c.completed_at or 0.0)[-FINISHED_SHOWN:]

    async def _work(self, session_id: str, key: str | None, running: RunningTurn | None,
                    ended: dict[str, list[tuple[str, str]]]) -> list[dict[str, Any]]:
        """The session's running turn and every earlier turn with children still running, each
        with its children (the latest to end too, `_ended_of`), in launch order. ``key``:
        its chat's; None for a session no chat has now (replaced by ``/new`` while its children wind
        down, or a plugin's own)."""
        live = self._gateway.host.children.children(session_id)
        platform, chat_id, _ = split_session_key(key) if key is not None else (None, None, None)
        turns = dict.fromkeys([*([running.turn_id] if running is not None else []), *(c.parent_turn_id for c in live)])
        work = []
        for turn_id in turns:
            own = [c for c in live if c.parent_turn_id == turn_id]
            finished = await self._ended_of(session_id, turn_id, own, ended)
            children = sorted((*finished, *own), key=lambda c: c.created_at)
            turn = running if running is not None and running.turn_id == turn_id else None
            work.append({
                "session_key": key, "platform": platform, "chat_id": chat_id,
                "session_id": session_id, "turn_id": turn_id, "running": turn is not None,
                "kind": turn.kind if turn is not None else None,
                "started_at": turn.started_at if turn is not None else None,
                "tool": turn.current_tool if turn is not None else None,
                "children": [await self._child(c, 0, ended) for c in children],
            })
        return work

    async def _child(self, child: ChildSnapshot, depth: int, ended: dict[str, list[tuple[str, str]]]
                     ) -> dict[str, Any]:
        nested: list[ChildSnapshot] = []
        if depth < MAX_DEPTH:
            live = self._gateway.host.children.children(child.subagent_id)
            nested = [*await self._ended_of(child.subagent_id, None, live, ended), *live]
        return {**_child(child), "children": [await self._child(c, depth + 1, ended)
                                              for c in sorted(nested, key=lambda c: c.created_at)]}

    async def _delegation(self, row: DelegationRow) -> dict[str, Any]:
        found = await self._lookup([t.subagent_id for t in row.tasks])
        platform, chat_id, _ = split_session_key(row.session_key)
        tasks = []
        for task in row.tasks:
            child = found.get(task.subagent_id)
            tasks.append({"index": task.task_index, "goal": _preview(task.goal), "subagent_id": task.subagent_id,
                          "attempts": task.attempts, "state": child.state.value if child else "UNKNOWN",
                          "error": _error(child.error) if child else None})
        return {"id": row.delegation_id, "session_key": row.session_key, "platform": platform, "chat_id": chat_id,
                "origin_turn_id": row.origin_turn_id, "dispatched_at": row.dispatched_at,
                "ran": sum(1 for t in tasks if t["state"] not in _LIVE), "tasks": tasks, "status": row.status,
                "reason": row.reason, "settled_at": row.settled_at}

    async def _lookup(self, ids: list[str]) -> dict[str, ChildSnapshot]:
        found = {sid: self._finished[sid] for sid in ids if sid in self._finished}
        missing = [sid for sid in ids if sid not in found]
        if missing:
            for sid, child in (await self._gateway.host.children.lookup(missing)).items():
                found[sid] = child
                if child.state.terminal:
                    self._finished[sid] = child
                    if len(self._finished) > FINISHED_CACHE:
                        self._finished.popitem(last=False)
        return found


_LIVE = frozenset({"PENDING", "STARTING", "RUNNING", "CANCEL_REQUESTED", "UNKNOWN"})


def _child(c: ChildSnapshot) -> dict[str, Any]:
    return {"id": c.subagent_id, "goal": _preview(c.goal), "role": c.role, "state": c.state.value,
            "live": not c.state.terminal, "activity": c.activity, "model": c.model, "created_at": c.created_at,
            "started_at": c.started_at, "completed_at": c.completed_at, "error": _error(c.error)}


def _message(r: OutboxRow) -> dict[str, Any]:
    return {"id": r.id, "key": r.key, "platform": r.platform, "chat_id": r.chat_id, "kind": r.kind, "op": r.op,
            "status": r.status, "attempts": r.attempts, "created_at": r.created_at,
            "next_attempt_at": r.next_attempt_at, "error": _error(r.last_error), "text": _preview(r.text)}


def _letter(d: Any) -> dict[str, Any]:
    # A damaged letter (`DeadLetter.damaged`) names no platform, chat or event: the page names it by its id.
    return {"id": d.id, "platform": d.platform, "chat_id": d.chat_id, "event_id": d.event_id,
            "attempts": d.attempts, "error": _error(d.error), "dead_at": d.dead_at, "text": _preview(d.text),
            "damaged": d.damaged is not None}


def _error(error: str | None) -> str | None:
    return None if error is None else redacted_cut(error, ERROR, _cut, read=2 * ERROR)


def _preview(text: str | None) -> str:
    # Only what is shown is masked (and as far on again, for a secret that begins there): a message
    # may be a whole reply, and each refresh reads up to 50 of them.
    return redacted_cut(text, PREVIEW, _cut, read=2 * PREVIEW)


def _cut(text: str, limit: int) -> str:
    # Half a flag showed as a letter, a thumbs-up without its skin tone.
    return text if len(text) <= limit else whole_prefix(text, limit - 1, CLUSTER_REACH) + "…"
