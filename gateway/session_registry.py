"""The one owner of gateway sessions: it creates them, starts new generations, stops and
evicts them, and is the only code that changes a `GatewaySession`.

Sessions live in the store; the registry keeps the ones in use in memory, and lets a
session that has been idle a while (no turn running, nothing queued, no child still
working for it) leave memory until its chat next speaks.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple, get_args

from agent import AgentSession, Clock, Tool, active_turn, new_id
from gateway import senders
from gateway.replies import stopped_by_member
from gateway.sessions import ChatKey, GatewaySession, Mode, RunningTurn, WorkItem, arrived, quote_of
from gateway.store import SessionRow, SessionTable, session_key, split_session_key
from platforms.base import Inbound

log = logging.getLogger("gateway.sessions")

QUEUED = 100
"""Turns a session holds in memory waiting to run. A chat's messages after those wait in the store, in order
(`SessionTable.hold`), and are read back as turns begin: a chat sending thousands while a turn runs cost memory
for each, text and files, for as long as they waited. Background deliveries are never held (the backlog guard
bounds them, `gateway.backlog`), but one queued while messages are held runs after them (`WorkItem.after_held`)."""

NewAgent = Callable[[str, Mode, ChatKey, str], AgentSession]
"""``new_agent(session_id, mode, chat, backend)``: a fresh parent agent for a session generation."""
DelegateFor = Callable[[Mode, str], Tool | None]
"""``delegate_for(mode, backend)``: the ``delegate_task`` a session of that mode and backend gets."""
Ended = Callable[[GatewaySession, str, RunningTurn | None, list[tuple[str, Inbound]]], None]
"""``ended(session, why, stopped, waiting)``: a stop (``why``, as `RunningTurn.suppressed_by`) ended
the ``stopped`` turn (or none) and the ``waiting`` messages (turn id, event) before they were
answered: settle them now, in the stop's own commit, so that no restart answers them, even one
that comes before the stopped turn has wound down. A ``/new`` (why ``new``) has the ends its
session's turns still owe (`GatewaySession.owed`) recorded first, calling it with neither if
nothing else is ended: else a restart would answer their messages in the new generation."""
Drops = Callable[[Inbound], bool]
"""Whether a stop drops a message waiting for a turn (by its event), or leaves it to be answered."""


def every(event: Inbound) -> bool:
    """The stop drops every waiting message (a private chat's)."""
    return True


@dataclass(frozen=True, slots=True)
class Stopped:
    """What `SessionRegistry.stop` ended."""

    turn: bool
    """A turn was running: it is suppressed and interrupted."""
    dropped: int
    """The chat's messages that waited for a turn (queued, or steered into the stopped turn and
    not read yet): dropped for good, their events settled, so no restart answers them either."""
    kept: tuple[Inbound, ...] = ()
    """The waiting messages the stop left alone (in a group, other members'; any sent after the
    stop): answered next."""


class SessionRegistry:
    def __init__(self, table: SessionTable, *, new_agent: NewAgent, mode_for: Callable[[str], Mode],
                 clock: Clock, ended: Ended, backend_for: Callable[[], str] = lambda: "default",
                 delegate_for: DelegateFor | None = None,
                 waits_again: Callable[[Inbound], None] = lambda event: None,
                 available: Callable[[str], bool] = lambda backend: True) -> None:
        """``waits_again``: a message steered into a turn goes back to waiting for a turn of its own (the
        turn was stopped, or ended, before reading it): its event is no longer part of what runs (`Inbox.reopen`).
        ``available``: whether a delegation backend is registered (`lifecycle.Routing.available`)."""
        self._table = table
        self._available = available
        self._told_gone: set[str] = set()
        """Chats whose session was logged as delegating through a backend that is gone (`_tell_gone`)."""
        self._waits_again = waits_again
        self._ended = ended
        self._new_agent = new_agent
        self._mode_for = mode_for
        self._backend_for = backend_for
        self._delegate_for = delegate_for
        self._clock = clock
        self._sessions: dict[str, GatewaySession] = {}
        self._by_agent: dict[str, GatewaySession] = {}
        self.run = new_id("run-")
        """This process's messages held in the store (`QUEUED`): an earlier one's were handed over anew at the
        start, from the inbox, and are forgotten (`SessionTable.forget_held`)."""
        self._holds = 0
        """Messages this process has held, in all chats: each held one is stored with its number (`_Held.n`)."""

    # -- lookups -----------------------------------------------------------------------

    def __iter__(self) -> Iterator[GatewaySession]:
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, key: object) -> bool:
        """Whether the session with this key (`gateway.store.session_key`) is in memory."""
        return key in self._sessions

    def keys(self) -> set[str]:
        return set(self._sessions)

    def find(self, platform: str, chat_id: str, thread_id: str | None) -> GatewaySession | None:
        """The session if it is in memory (never loads or creates one)."""
        return self._sessions.get(session_key(platform, chat_id, thread_id))

    def by_agent(self, session_id: str) -> GatewaySession | None:
        """The in-memory session whose *current* generation has this agent session id."""
        return self._by_agent.get(session_id)

    def calling_turn(self) -> tuple[GatewaySession, RunningTurn] | None:
        """The session and running turn whose agent runs the calling code (a tool's service);
        None outside such a turn, and for a turn that was stopped or whose generation ended."""
        turn = active_turn()
        session = self._by_agent.get(turn.session.session_id) if turn is not None else None
        running = session.running if session is not None else None
        if running is None or running.turn_id != turn.turn_id or running.suppressed:
            return None
        return session, running

    def get(self, platform: str, chat_id: str, thread_id: str | None) -> GatewaySession:
        """The chat's session: from memory, else loaded from the store, else created (its
        delegation mode resolved now and pinned until ``/new``)."""
        key = session_key(platform, chat_id, thread_id)
        session = self._sessions.get(key)
        if session is not None:
            return session
        row = self._table.load(key)
        if row is None:
            row = self._new_row(key, platform, generation=1)
            self._table.save(row)
        else:
            if damaged := _damaged(row):
                row = self._mended(row, platform, damaged)
                self._table.save(row)
            if not self._available(row.backend):  # a mended row's too: its backend may be the one gone
                row = self._backend_gone(row, platform)
        now = self._clock.time()
        chat = (platform, chat_id, thread_id)
        session = GatewaySession(key, platform, chat_id, thread_id, row.session_id, row.generation, row.mode,
                                 self._agent(row, chat), generation_started_at=now, last_active=now,
                                 backend=row.backend, backend_choice=row.backend_choice)
        self._sessions[key] = session
        self._by_agent[session.session_id] = session
        return session

    # -- changes -------------------------------------------------------------------------

    def new_generation(self, session: GatewaySession, *, drops: Drops = every,
                       by: Inbound | None = None) -> tuple[str, Stopped]:
        """``/new``: stop the running turn, drop the messages waiting for one that ``drops`` picks
        (the others are answered in the new generation), and start a generation with its mode
        re-resolved, the chat's chosen delegation backend, and an empty conversation. Returns the old
        generation's agent session id and what was stopped (``by``: as for `stop_turn`). If the new agent
        cannot be built, it raises and nothing has changed."""
        old_id = session.session_id
        # The agent is built before anything changes: a failure to build it leaves the old generation
        # running, stored as it was.
        row = self._new_row(session.key, session.platform, generation=session.generation + 1,
                            choice=session.backend_choice)
        if not self._available(row.backend):  # the chat's choice: it stands, as /delegation shows
            self._tell_gone(row, session.platform)
        agent = self._agent(row, session.chat)
        if session.owed:  # recorded with the transcript they belong to, before it is replaced
            self._ended(session, "new", None, [])
        stopped = self.stop(session, "session reset by /new", why="new", drops=drops, by=by)
        self._table.save(row)
        session.session_id, session.generation, session.mode = row.session_id, row.generation, row.mode
        session.backend = row.backend
        session.agent = agent
        session.saved = None
        session.heard.clear()
        # Activity: the command that asked for it may await the old generation's children's hooks before it
        # queues its text, and a retention sweep meanwhile must not evict the session it queues into.
        session.generation_started_at = session.last_active = self._clock.time()
        self._by_agent.pop(old_id, None)
        self._by_agent[session.session_id] = session
        return old_id, stopped

    def choose_backend(self, session: GatewaySession, backend: str, *, now: bool) -> None:
        """``/delegation``: the chat's delegation backend from its next generation on, and with
        ``now`` also from its next turn (a running turn keeps the one it started with). Stored:
        it survives restarts. If building the new tool or storing the choice fails, nothing changes."""
        switch = now and backend != session.backend
        tool = self._delegate_for(session.mode, backend) if switch and self._delegate_for is not None else None
        current = backend if switch else session.backend
        self._table.save_backend(session.key, current, backend)
        session.backend, session.backend_choice = current, backend
        if tool is not None:
            session.agent.replace_tool(tool)

    def stop(self, session: GatewaySession, reason: str, *, why: str = "stop", drops: Drops = every,
             turn: bool = True, keeps: Collection[str] = (), by: Inbound | None = None) -> Stopped:
        """``/stop``: suppress and interrupt the running turn (not with ``turn`` False: it goes on, with
        what was steered into it), and drop the messages waiting for a turn that ``drops`` picks; the
        others stay queued, in order (those steered into the turn and not read yet first, as `stop_turn`
        puts them back). Queued background deliveries go too, but those of the delegations ``keeps``
        names: the caller settles their delegations. ``by``: as for `stop_turn`."""
        # The store first: a refusal (a full disk) raises before anything changed, and the stop can be asked again.
        # Taken after it, what was steered into the turn and not read yet would be lost from it and the queue.
        rows, damaged = self._held(session)
        held = [(row.seq, row.item) for row in rows]  # those not dropped wait on in the store
        released = [*damaged, *(seq for seq, item in held if item.event is not None and drops(item.event))]
        if released:
            self._table.release(released)
            session.held -= len(released)
        _set_aside(session, damaged)
        running = session.running if turn else None
        self._send_home(running)
        self._answer_after_held(session, running.held_answer if running is not None else None)
        # Taken before `stop_turn`, which would queue them again as turns; settled as the running turn's.
        unread = [(running.turn_id, item) for item in _take_unread(session, running)] if running is not None else []
        # Written here and held for another thread's question (`RunningTurn.held_home`): waiting here, as if queued.
        waiting: list[tuple[str, Inbound]] = [(item.turn_id, item.event) for item in self._take_homed(session, drops)]
        kept: list[WorkItem] = []
        back = 0  # the first of those kept: steered into the turn and not read yet
        for n, (turn_id, item) in enumerate([*unread, *((item.turn_id, item) for item in session.queue)]):
            if item.event is not None and drops(item.event):
                waiting.append((turn_id, item.event))
            elif item.event is not None or item.delegation_id in keeps:
                kept.append(item)
                back += n < len(unread)
        held_kept: list[Inbound] = []
        for _, item in held:
            if item.event is not None and drops(item.event):
                waiting.append((item.turn_id, item.event))
            elif item.event is not None:
                held_kept.append(item.event)
        session.queue.clear()
        session.queue.extend(kept[back:])
        _put_back(session.queue, kept[:back])
        for _, item in unread:
            if item.event is not None and not drops(item.event):  # back to waiting, as `stop_turn` puts them
                self._wait_again(item.event)
        stopped = turn and self.stop_turn(session, reason, why=why, by=by)
        if waiting:
            self._ended(session, why, None, waiting)
        return Stopped(stopped, len(waiting), (*(item.event for item in kept if item.event is not None), *held_kept))

    def stop_turn(self, session: GatewaySession, reason: str, *, why: str, by: Inbound | None = None) -> bool:
        """Suppress the running turn (nothing more of it reaches the chat; ``why`` is
        `RunningTurn.suppressed_by`), interrupt it hard, and settle its event at once. Messages
        steered into it and not read yet go back into the queue, as `end` puts them. False when no turn
        runs, only its reply is still being journaled (`RunningTurn.replying`), or it was stopped
        already and only winds down: the first stop's reason, stopper and note stand. ``by``: the
        command's message that asked for the stop (`RunningTurn.stop_note`)."""
        running = session.running
        if running is None or running.replying or running.suppressed:
            return False
        # What was steered into it and not read yet runs next, as if the turn had ended before reading
        # it: winding down, the stopped turn could still read it (with a tool's result), never to answer.
        self._send_home(running)
        self._answer_after_held(session, running.held_answer)
        unread = _take_unread(session, running)
        _put_back(session.queue, unread)
        for item in unread:
            if item.event is not None:
                self._wait_again(item.event)
        running.suppressed_by = why
        if by is not None and not by.is_private and running.event is not None and running.event.user_id != by.user_id:
            running.stop_note = stopped_by_member(why, by)
        # Superseded by the chat's next message, the turn ends but its work goes on: what it launches meanwhile too.
        session.agent.interrupt(reason, hard=True, ends_work=why != "superseded")
        self._ended(session, why, running, [])
        return True

    def steer(self, session: GatewaySession, inbound: Inbound, turn_id: str) -> None:
        """Hand a message (accepted with ``turn_id``) to the running turn, read at its next model call."""
        assert session.running is not None
        # Not read, it runs behind the messages held in the store before it came, as a completion does (`enqueue`).
        session.running.steered.append(WorkItem("message", inbound.text, turn_id, inbound, arrival=arrived(),
                                                after_held=self._holds if session.held else None))
        session.took(inbound)
        session.agent.steer(senders.for_model(inbound.text, inbound))

    def waits_from(self, session: GatewaySession, user_id: str) -> bool:
        """Whether a message of ``user_id`` waits for a turn in the session: queued in memory, or held in the
        store (read only then). A read the store refuses counts as one: a message queued behind waits no more
        than it would anyway, one steered past its sender's waiting one is answered out of order."""
        if any(item.event is not None and item.event.user_id == user_id for item in session.queue):
            return True
        if not session.held:
            return False
        try:
            return self._table.holds_from(self.run, session.key, user_id)  # one look-up, however many are held
        except Exception as exc:
            log.warning("%s chat %s: could not read the messages waiting in the store (%s: %s)",
                        session.platform, session.chat_id, type(exc).__name__, exc)
            return True

    def enqueue(self, session: GatewaySession, item: WorkItem) -> GatewaySession:
        """Queue ``item`` in the chat's session in memory, and return it. A caller may hold ``session`` across
        an await (a background delivery looking its children up) while an idle sweep lets it leave memory:
        queued in that object, the turn would run on an agent no stop, steer or later message reaches, beside
        the one a reload builds for the chat's next message, both storing their transcripts. So one that left
        memory comes back, unless its chat was loaded anew meanwhile: the item goes to that one."""
        current = self._sessions.get(session.key)
        if current is None:
            self._sessions[session.key] = current = session
            self._by_agent[session.session_id] = session
        current.last_active = self._clock.time()
        if item.put_back:  # it came before what was queued since: it goes where it came, as a steer put back does
            item.put_back = False
            self._answer_after_held(current, item)
            _put_back(current.queue, [item])
            return current
        item.arrival = arrived()
        if item.event is not None and (current.held or len(current.queue) >= QUEUED):
            self._hold(current, item)  # refused (a full disk): raised, and the event is handled again later
        else:
            if current.held:  # a background delivery: it runs after the messages held before it came
                item.after_held = self._holds
            current.queue.append(item)
        return current

    def begin(self, session: GatewaySession) -> tuple[WorkItem, RunningTurn] | None:
        """Take the next queued item as the running turn; None when the queue is empty."""
        if session.held and (len(session.queue) < QUEUED or _after_held(session)):
            self._read_back(session)
        if not session.queue:
            return None
        item = session.queue.popleft()
        if item.event is not None:
            session.took(item.event)
        quote = item.quote if item.event is None else quote_of(item.event)
        session.running = RunningTurn(item.turn_id, item.kind, started_at=self._clock.time(), event=item.event,
                                      started_awake=self._clock.monotonic(), delegation_id=item.delegation_id,
                                      quote=quote, answers=quote)
        return item, session.running

    def end(self, session: GatewaySession) -> list[Inbound]:
        """The running turn is over, in memory: messages steered into it that it never read go back
        into the queue as turns of their own, waiting again (`waits_again`), each behind what came before
        it (in a group, another member's message) and ahead of what came after (`_put_back`); returns the
        steered events it did read. What it added to the transcript is stored with its messages' settling
        (`store_transcript`), unless it runs again after the next start (`RunningTurn.runs_again`):
        then nothing of it is, and what was steered into it is answered after the restart too."""
        running, session.running = session.running, None
        if running is not None and running.runs_again:
            return []
        self._send_home(running)
        unread = session.agent.take_steer() if running is not None and running.steered else []
        read = running.steered[: len(running.steered) - len(unread)] if running is not None else []
        unread_items = running.steered[len(read):] if running is not None else []
        held = [running.held_answer] if running is not None and running.held_answer is not None else []
        self._answer_after_held(session, held[0] if held else None)
        _put_back(session.queue, sorted([*held, *unread_items], key=lambda item: item.arrival))
        for item in unread_items:
            if item.event is not None:  # as `stop_turn` does: a death in an earlier turn is not charged to it
                self._wait_again(item.event)
        session.last_active = self._clock.time()
        return [item.event for item in read if item.event is not None]

    def store_transcript(self, session: GatewaySession, *, then: Callable[[], None] = lambda: None) -> None:
        """Store what the session's agent added to its transcript since it was last stored (all of it
        after a compaction, ``/new`` or a reload), then call ``then``: writes that stand or fall with it,
        in the caller's transaction. Raises what the store refuses, or ``then`` raises, and then nothing
        counts as stored: the next call stores it all again."""
        messages = session.agent.messages
        start = session.unsaved_from()
        if start < len(messages) or start == 0:
            self._table.save_transcript(session.key, messages, start=start)
        then()
        session.mark_saved()

    def _take_homed(self, session: GatewaySession, drops: Drops) -> list[WorkItem]:
        """Take the messages written in ``session``'s thread that ``drops`` picks out of the turns of other threads
        that hold them for their question (`RunningTurn.held_home`): a stop there drops them as it drops those queued
        there. Left held, one not taken was answered there after its sender's ``/stop`` (in the new generation after
        a ``/new``)."""
        taken: list[WorkItem] = []
        for other in self._sessions.values():
            running = other.running
            item = running.held_answer if running is not None and running.held_home is not None else None
            if item is not None and item.event is not None and drops(item.event) \
                    and (item.event.platform, item.event.chat_id, item.event.thread_id) == session.chat:
                running.held_answer = running.held_home = None
                taken.append(item)
        return taken

    @staticmethod
    def _send_home(running: RunningTurn | None) -> None:
        """The message held for the turn's question from another thread of the chat (`RunningTurn.held_home`), not
        taken: queued in the session of the thread it was written in, where it came there. Not put back in this
        thread's queue, nor dropped by a stop here: it is that thread's message."""
        if running is None or running.held_answer is None or running.held_home is None:
            return
        item, home = running.held_answer, running.held_home
        running.held_answer = running.held_home = None
        item.put_back = True
        home(item)

    def _answer_after_held(self, session: GatewaySession, answer: WorkItem | None) -> None:
        """A message held for a question (`RunningTurn.held_answer`) goes back into the queue: it may have come after
        messages held in the store, and then runs after them (by `WorkItem.arrival`, `_in_order`), as a steer does."""
        if answer is not None and session.held and answer.after_held is None:
            answer.after_held = self._holds

    def _wait_again(self, event: Inbound) -> None:
        """`waits_again`, whose refusal (a full disk) only charges the message a death meanwhile: raised, it cut
        short the stop or end that takes the message back, after the waiting messages left the queue and the
        store, and before their stop settled them (never answered, nor settled, until a restart ran them)."""
        try:
            self._waits_again(event)
        except Exception as exc:
            log.warning("%s event %s: could not record that it waits for its turn again (%s: %s)",
                        event.platform, event.event_id, type(exc).__name__, exc)

    def interrupt_all(self, reason: str) -> None:
        """Shutdown: interrupt every running turn hard. Such a turn sends nothing and stores
        nothing; its event stays unsettled, so it runs again, whole, after the next start. Not a
        turn a stop ended before, nor one whose reply is being journaled (`RunningTurn.runs_again`):
        their messages are settled, so what they added to the transcript is stored."""
        for session in self._sessions.values():
            if session.running is not None:
                session.running.shutdown = True
                session.agent.interrupt(reason, hard=True)

    def evict_idle(self, idle_after: float, keeps_children: Callable[[str], bool]) -> int:
        """Let sessions idle for ``idle_after`` seconds leave memory, unless busy or a child still
        works for them (``keeps_children(session_id)``). Returns how many left."""
        now = self._clock.time()
        evicted = 0
        for key, session in list(self._sessions.items()):
            if (session.busy or session.owed or now - session.last_active < idle_after
                    or keeps_children(session.session_id)):
                continue
            del self._sessions[key]
            self._by_agent.pop(session.session_id, None)
            evicted += 1
        return evicted

    # -- holding -----------------------------------------------------------------------

    def _hold(self, session: GatewaySession, item: WorkItem) -> None:
        assert item.event is not None
        self._holds += 1
        held = {"n": self._holds, "kind": item.kind, "text": item.text, "turn_id": item.turn_id,
                "event": item.event.to_json(), "arrival": item.arrival}
        self._table.hold(self.run, session.key, json.dumps(held))
        session.held += 1

    def drop_held(self, session: GatewaySession, message_id: str,
                  withdraw: Callable[[Inbound], bool]) -> WorkItem | None:
        """Take the message ``message_id`` held in the store for a turn of its own (not an album's, its items gathered)
        out of it if ``withdraw(event)``, a write in the same store, says so (its user deleted it:
        `gateway.message_edits`), both in one transaction; returns it, or None. A damaged row is left to the read-back
        (`_held`), which sets it aside. Raises what the store refuses, and then nothing changed."""
        found = self._table.held_message(self.run, session.key, message_id) if session.held else None
        if found is None:
            return None
        try:
            item = _read_held(*found).item
        except _DAMAGED:
            return None
        event = item.event
        if item.kind != "message" or event is None or event.aliases \
                or not self._table.release_if(found[0], lambda: withdraw(event)):
            return None
        session.held -= 1
        return item

    def _read_back(self, session: GatewaySession) -> None:
        """Queue the messages held in the store that the session's queue has room for, oldest first (each before
        the background deliveries queued after it was held). Rows set aside (`_held`) leave room: read on. With no
        room, one row when the next turn runs after messages held (`WorkItem.after_held`): left in the store behind
        the queue that holds it and those after it, it ran first."""
        while session.held and ((room := QUEUED - len(session.queue)) > 0 or _after_held(session)):
            if room <= 0:  # one past the bound: it goes before the next turn, or after those queued
                room = 1
            try:
                held, damaged = self._held(session, room)
                self._table.release([*damaged, *(row.seq for row in held)])
            except Exception as exc:  # the store refused: read again as the next turn begins, or a message comes
                log.warning("%s chat %s: could not read back the messages waiting in the store (%s: %s)",
                            session.platform, session.chat_id, type(exc).__name__, exc)
                return
            _set_aside(session, damaged)
            # Fewer rows than asked for: none are left (the count must not keep the session busy for good).
            read = len(held) + len(damaged)
            session.held = session.held - read if read == room else 0
            queued = list(session.queue)
            session.queue.clear()
            session.queue.extend(_in_order(queued, held))
            if len(session.queue) > QUEUED:
                return

    def _held(self, session: GatewaySession, limit: int | None = None) -> tuple[list[_Held], dict[int, str]]:
        """The session's first ``limit`` rows held in the store (all by default), in order: the messages read from
        them, and the rows that hold none (a hand edit, a damaged write), each with why, for the caller to release
        with the others and `_set_aside`: left in the store, the first would fail every read-back, for good."""
        held: list[_Held] = []
        damaged: dict[int, str] = {}
        for seq, row in self._table.held(self.run, session.key, limit) if session.held else []:
            try:
                held.append(_read_held(seq, row))
            except _DAMAGED as exc:
                damaged[seq] = type(exc).__name__  # not its text, which may quote the row
        return held, damaged

    # -- building ---------------------------------------------------------------------

    def _new_row(self, key: str, platform: str, *, generation: int, choice: str | None = None) -> SessionRow:
        return SessionRow(key=key, session_id=new_id("s-"), generation=generation, mode=self._mode_for(platform),
                          backend=choice or self._backend_for(), backend_choice=choice)

    def _mended(self, row: SessionRow, platform: str, damaged: dict[str, str]) -> SessionRow:
        """``row`` with its ``damaged`` columns (`_damaged`) set anew, its conversation kept, after one ERROR naming
        the chat and the columns: read as they were, a text generation failed every ``/new`` of the chat, for good.
        A lost session id starts a new one (children of the old one no longer report to it), a lost generation
        counts from 1, a lost mode or backend is resolved again as for a new session, a lost choice is forgotten."""
        log.error("%s: its stored session (gateway_sessions key %s) held what no session can in %s; set anew, and the"
                  " conversation goes on", _where(platform, row.key), row.key,
                  ", ".join(f"{column} ({why})" for column, why in damaged.items()))
        choice = None if "backend_choice" in damaged else row.backend_choice
        fresh = self._new_row(row.key, platform, generation=1, choice=choice)
        return dataclasses.replace(row, **{column: getattr(fresh, column) for column in damaged})

    def _backend_gone(self, row: SessionRow, platform: str) -> SessionRow:
        """Stored ``row``, whose delegation backend no loaded plugin registers (the operator removed or renamed it).
        It takes, and stores, the backend its next session would (`_new_row`: the chat's ``/delegation`` choice, else
        ``delegation.backend``) if that one is there: kept, every delegation of the chat failed until someone typed
        ``/delegation``. Else (the backend is the chat's choice, or that one is gone too) it is kept (`_tell_gone`).
        One WARNING names the chat and both backends."""
        then = row.backend_choice or self._backend_for()
        if then == row.backend or not self._available(then):
            self._tell_gone(row, platform)
            return row
        self._table.save_backend(row.key, then, row.backend_choice)
        log.warning("%s: its delegation backend %r is not available (no loaded plugin registers it); it delegates"
                    " through %r from now on, as its next session would (%s)", _where(platform, row.key), row.backend,
                    then, "delegation.backend" if row.backend_choice is None else "chosen with /delegation")
        return dataclasses.replace(row, backend=then)

    def _tell_gone(self, row: SessionRow, platform: str) -> None:
        """One WARNING per chat and process: the session delegates through a backend that is gone, and starts no
        subagents until it is back or the chat switches (which ``/delegation`` and the failing call tell the chat)."""
        if row.key not in self._told_gone:
            self._told_gone.add(row.key)
            log.warning("%s: its delegation backend %r is not available (no loaded plugin registers it); it starts no"
                        " subagents until the backend is back or the chat switches with /delegation",
                        _where(platform, row.key), row.backend)

    def _agent(self, row: SessionRow, chat: ChatKey) -> AgentSession:
        agent = self._new_agent(row.session_id, row.mode, chat, row.backend)
        if row.transcript:
            system = agent.messages[:1] if agent.messages and agent.messages[0]["role"] == "system" else []
            agent.messages = system + [m for m in row.transcript if m.get("role") != "system"]
        return agent


class _Held(NamedTuple):
    seq: int
    """Its row in the store (`SessionTable.held`)."""
    n: int
    """Its number among the messages this process held (`SessionRegistry._holds`)."""
    item: WorkItem


_TYPES = {"session_id": (str,), "generation": (int,), "mode": (str,), "backend": (str,),
          "backend_choice": (str, type(None))}
"""What each column of a stored session must hold (`SessionRow`)."""
_SQL_TYPES = {str: "text", bytes: "bytes", int: "integer", float: "real", type(None): "null"}


def _where(platform: str, key: str) -> str:
    """The chat a session's log lines name: ``telegram chat 42``, with ``thread 7`` in a thread."""
    _, chat_id, thread_id = split_session_key(key)
    return f"{platform} chat {chat_id}" + ("" if thread_id is None else f" thread {thread_id}")


def _damaged(row: SessionRow) -> dict[str, str]:
    """The columns of a stored session that hold what no session can (a hand edit, a damaged write: SQLite keeps
    any type in any column), each with why: the type it held, never the value, which may hold anything."""
    damaged: dict[str, str] = {}
    for column, types in _TYPES.items():
        value = getattr(row, column)
        if type(value) not in types:
            damaged[column] = _SQL_TYPES.get(type(value), type(value).__name__)
        elif column == "mode" and value not in get_args(Mode):
            damaged[column] = "not a mode"
    return damaged


_DAMAGED = (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError)
"""What reading a held row that holds no message raises (`_read_held`). Recursion: nested deeper than the parser goes;
overflow: a number no int holds (``1e999``)."""


def _read_held(seq: int, row: bytes) -> _Held:
    """The message a held row (`SessionTable.held`) holds; raises one of `_DAMAGED` for a row that holds none."""
    item = json.loads(row)
    return _Held(seq, int(item["n"]), WorkItem(item["kind"], item["text"], item["turn_id"],
                                               Inbound.from_json(item["event"]), arrival=int(item["arrival"])))


def _in_order(queued: Iterable[WorkItem], held: Iterable[_Held]) -> Iterator[WorkItem]:
    """The ``queued`` items with the ``held`` messages read back (oldest first) where they came (`WorkItem.arrival`):
    each one before the background deliveries queued after it was held, and the messages steered or held for a
    question after it (put back, `SessionRegistry.end`), behind everything else."""
    rows = deque(held)
    for item in queued:
        while rows and rows[0].item.arrival < item.arrival:
            yield rows.popleft().item
        yield item
    yield from (row.item for row in rows)


def _after_held(session: GatewaySession) -> bool:
    """Whether the session's next turn runs after messages held in the store (`WorkItem.after_held`)."""
    return bool(session.queue) and session.queue[0].after_held is not None


def _set_aside(session: GatewaySession, damaged: dict[int, str]) -> None:
    """Log the held rows `SessionRegistry._held` could not read, released: by row, never their text (it may hold
    anything). Each one's event stays unsettled in the inbox, so the next start hands its message over anew."""
    for seq, why in damaged.items():
        log.error("%s chat %s: the held message in row %d (gateway_held, chat key %s) could not be read back (%s)"
                  " and is set aside; its message waits in the inbox for the next start, which hands it over anew",
                  session.platform, session.chat_id, seq, session.key, why)


def unread_steered(session: GatewaySession) -> list[Inbound]:
    """The messages steered into the running turn that it has not read yet, left where they are: a
    stop or ``/new`` puts them back in the queue (`_take_unread`), so they are not answered yet."""
    running = session.running
    if running is None or not running.steered:
        return []
    unread = running.steered[len(running.steered) - session.agent.unread_steers:]
    return [item.event for item in unread if item.event is not None]


def _put_back(queue: deque[WorkItem], items: Iterable[WorkItem]) -> None:
    """Queue ``items``, taken out of a running turn in the order they came, where they came (`WorkItem.arrival`):
    each behind the items queued before it and ahead of those queued after it. At the front, they were answered
    before another group member's message sent earlier, waiting for the same turn to end."""
    at = 0
    for item in items:
        while at < len(queue) and queue[at].arrival <= item.arrival:
            at += 1
        queue.insert(at, item)
        at += 1


def _take_unread(session: GatewaySession, running: RunningTurn) -> list[WorkItem]:
    """Take the messages steered into ``running`` that it has not read yet back out of it, with the answer it holds
    for a question it has not asked again (`RunningTurn.held_answer`), in the order they came."""
    held = [running.held_answer] if running.held_answer is not None else []
    running.held_answer = None
    unread = session.agent.take_steer() if running.steered else []
    if not unread:
        return held
    first = len(running.steered) - len(unread)
    taken = running.steered[first:]
    del running.steered[first:]
    return sorted(held + taken, key=lambda item: item.arrival)
