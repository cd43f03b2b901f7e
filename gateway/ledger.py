"""The ledger of background delegations: what ran, apart from what was delivered, across restarts.

A background ``delegate_task`` call is recorded here before the model can acknowledge
it (`Ledger.dispatched`, in the same commit as its children's PENDING journal rows: both
are durable, or neither is).
When its children have finished, their results become a completion turn of the
session that delegated; the turn runner settles the row when that turn's reply is
journaled (or the model answered ``NO_REPLY``), in the same commit. ``/stop`` and
``/new`` settle the rows they make moot. After a restart, `Ledger.resume` finds
every row not settled (one whose completion turn was running or queued, where it was among the chat's replayed
messages: `places`, `resume_first`): results that ran but were not delivered are delivered (the
completion turn keeps its id, so nothing is sent twice); children the restart
interrupted are reported to their chat, one message per delegation, or relaunched
with ``lifecycle.on_restart: resume``. Children launched again (that relaunch, ``/retry``,
``/agents retry``) are recorded in the same commit as their launch too (`_relaunch`).
How many may wait undelivered per chat is
`gateway.backlog`'s to say.

A completion turn that fails, and a turn whose handling failed, are `gateway.ledger_failures`' to handle.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from agent import Clock, new_id
from agent._compaction import ANSWER_RESULTS_SHARE
from agent._context_window import context_window
from agent._token_estimate import schema_tokens, weight
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from gateway import child_states
from gateway.backlog import BacklogGuard
from gateway.delegation_cards import DelegationCards, outcome
from gateway.excerpt import at_word
from gateway.ledger_failures import CompletionFailures, _short
from gateway.outbox import Outbox
from gateway.queue_places import RUNNING, QueuePlaces
from gateway.replies import SILENCE, SUPPRESSED_REASONS, child_failure_reason, stopped_by_member
from gateway.sender import BACKOFF_FIRST, BACKOFF_MAX
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession, WorkItem, quote_of
from gateway.store import DelegationRow, GatewayStore, LedgerTask, split_session_key
from gateway.store.delegations import COMPLETION_TURN_PREFIX, Status
from gateway.turn_runner import TurnRunner
from lifecycle import (
    PROCESS_EXIT,
    BackgroundDispatch,
    ChildSnapshot,
    ChildSpec,
    HostView,
    SubagentLifecycleError,
    SubagentState,
)
from lifecycle.settings import LifecycleSettings
from platforms.base import Inbound

log = logging.getLogger("gateway.ledger")

S = SubagentState
COMPLETION_PREFIX = (
    "[Background delegation results] The subagents you dispatched earlier have finished. Tell the user "
    f"what they found. If nothing needs saying, reply with exactly {SILENCE}.\n"
)
COMPLETION_GOAL_CHARS = 500
"""The most of each goal a completion turn gives back, cut at a space, saying how much more there was: the
parent wrote its goals (up to `lifecycle.MAX_GOAL_CHARS` each) and needs to tell its results apart, not to
read them again. Whole, ten of them were 160,000 characters in the turn's message, which compaction keeps
word for word as the newest, read again at every later request of the session."""
FAILED = frozenset({S.FAILED, S.INTERRUPTED, S.CANCELLED})
RETRIED = ("interrupted", "failed", "cancelled")
"""How the children /retry runs again ended (`FAILED`), in the order the report after a restart names them."""
STOPS = frozenset({SUPPRESSED_REASONS["stop"], SUPPRESSED_REASONS["new"]})
"""Why a completion turn is ended by a command that then settles the session's other delegations (`suppress`)."""


class Ledger(CompletionFailures):
    def __init__(self, store: GatewayStore, registry: SessionRegistry, runner: TurnRunner, children: HostView,
                 outbox: Outbox, cards: DelegationCards, *, settings: LifecycleSettings, clock: Clock,
                 delivery_attempts: int = 3) -> None:
        """``delivery_attempts``: how often a completion turn may fail before its results are sent as they are
        (``inbox.max_attempts``, as for a message's turn)."""
        self._outbox = outbox
        self._delivery_attempts = delivery_attempts
        self._held: set[str] = set()
        """Delegations whose completion turn a dead process cut short, where the store refused to count that:
        not delivered in this run (uncounted, one that kills the process would run at every start)."""
        self._aside: set[asyncio.Task[None]] = set()
        """Stops of the children of turns whose handling failed (`abandon`), results sent as they are
        (`completion_failed`)."""
        self._cards = cards
        self._table = store.delegations
        self._sessions = store.sessions
        self._inbox = store.inbox
        self._registry = registry
        self._runner = runner
        self._children = children
        self._settings = settings
        self._clock = clock
        self._watching: dict[str, asyncio.Task[None]] = {}
        self._endings: dict[str, str] = {}
        """How the children of each delegation whose results were handed on ended, when not all
        succeeded: for its card's done line, until the delegation is settled."""
        self._stopped_deliveries: dict[str, int] = {}
        """Per session generation: its completion turns a ``/stop`` or ``/new`` ended before their reply,
        settled by the turn runner in the stop's own commit (`completion_ended`), for that stop's
        count of results that will not come (`suppress`), which it takes next."""
        self._retrying = asyncio.Lock()
        self._taken_up: set[str] = set()
        """Delegations a stopped process left whose lost children a retry ran again before the start took them up
        (`_left_by_restart`), and those `resume_first` took up: `resume` leaves them be (relaunched or reported
        again, their tasks ran twice; delivered again, their results were answered twice)."""
        self._relaunching: dict[tuple[str, str], int] = {}
        """(session generation, origin turn) -> relaunches under way, from their launch until the ledger
        names their children: no stray of a restart (`forget_replayed`), though named by no row yet."""
        # A delegation's first children may finish long before its last (or before a restart, after
        # which `resume` reads them back): their results must outlive the journal's retention until
        # it is settled, or they arrive as lost, or run again.
        children.keep_results_since(self._table.oldest_running_dispatch)
        self.backlog = BacklogGuard(self._table, registry, outbox)
        self.admit = self.backlog.admit
        """The background tool's ``admit`` (see `gateway.backlog`)."""

    # -- recording ----------------------------------------------------------------------

    def dispatched(self, dispatch: BackgroundDispatch) -> Callable[[bool], None]:
        """The background tool's ``on_dispatch``, called before its children's PENDING rows commit: the
        delegation's row is written into the same batch of the state database, so it commits with them or
        not at all (committed apart, a crash or a full disk between the two left children that ran, or were
        relaunched or reported at the next start, whose results nothing delivered to the chat). Returns what
        the tool calls with that commit's outcome: the results are then delivered once the children finish,
        or, for a launch that was not recorded, the row is removed (`_discard`). Raises if the session is
        unknown (the tool then stops the children and fails the call)."""
        session = self._registry.by_agent(dispatch.parent_session_id)
        if session is None:
            raise LookupError(f"no gateway session has agent session {dispatch.parent_session_id}")
        before = self.backlog.waiting(session)
        row = DelegationRow(
            dispatch.delegation_id, session.key, dispatch.parent_session_id, dispatch.parent_turn_id,
            dispatch.dispatched_at,
            tuple(LedgerTask(t.spec.task_index, t.subagent_id, _spec_json(t.spec)) for t in dispatch.tasks),
            "running",
        )
        self._table.add(row)

        def launched(ok: bool) -> None:
            if not ok:
                self._discard(row.delegation_id)
                return
            self._watch(row)
            self._cards.start(row, session)
            self.backlog.recorded(session, dispatch, before)

        return launched

    def _discard(self, delegation_id: str) -> None:
        """Remove the row of a delegation whose launch was not recorded. A full disk rolled it back with
        the children's rows, but the database writes it again once it can (its writes are not lost): the
        delete follows it then, tried again until it goes through. Left, it would count against the chat's
        backlog, and the next start would report children that never ran as interrupted (it forgets such a
        row too: `_resume`)."""
        try:
            self._table.discard(delegation_id)
        except sqlite3.Error as exc:
            log.warning("delegation %s was not launched, and its row cannot be removed yet (%s); trying again",
                        delegation_id, exc)
            self._later(lambda: self._table.discard(delegation_id))

    def _later(self, write: Callable[[], object]) -> None:
        """Try ``write``, which the store refused, again, backing off, until it goes through."""
        task = asyncio.ensure_future(self._write_later(write))
        self._aside.add(task)
        task.add_done_callback(self._aside.discard)

    async def _write_later(self, write: Callable[[], object]) -> None:
        delay = BACKOFF_FIRST
        while True:
            await self._clock.sleep(delay)
            try:
                write()
                return
            except sqlite3.Error:
                delay = min(delay * 2, BACKOFF_MAX)

    def suppress(self, agent_session_id: str, reason: str, *, delivering: str | None = None,
                 sparing_turns: Collection[str] = (), ended: Collection[str] = (), sparing: Collection[str] = (),
                 by: Inbound | None = None, stopped_turn: str | None = None) -> int:
        """``/stop`` or ``/new``: the session generation's delegations dispatched so far will
        deliver nothing, but ``delivering``, whose results' reply is being journaled (past any
        stop), those whose completion turns ended, their outcome not recorded yet (``ended``: owed,
        `gateway.owed_ends`; their results went out, or were silenced), those dispatched by the
        turns of ``sparing_turns`` (a stop sent before the messages they answer), and those ``sparing``
        names (another member's ready results, `ready_for_others`). Returns how many of
        them had no child left at work: their results were ready (or being answered) and are dropped,
        which the chat must be told, as the stop reaches no child of theirs. ``by``: the command's message; in a
        group, each member whose delegation it ends is told who ended it (`_tell_stopped`), as a member whose turn
        it stops is. ``stopped_turn``: the turn the command stopped. Its asker reads its own note
        (`RunningTurn.stop_note`), not another for each delegation it dispatched; a completion turn has none, and
        the asker of the results it was answering (settled as it ended) is told here. Call it before the session's
        children are interrupted."""
        if by is not None and stopped_turn is not None and stopped_turn.startswith(COMPLETION_TURN_PREFIX):
            if (answered := self._table.get(stopped_turn.removeprefix(COMPLETION_TURN_PREFIX))) is not None:
                self._tell_stopped(answered, reason, by)
        running = [row for row in self._table.running_of(agent_session_id)
                   if row.delegation_id != delivering and row.delegation_id not in ended
                   and row.origin_turn_id not in sparing_turns and row.delegation_id not in sparing]
        live = self._live(agent_session_id)
        for row in running:
            if self._settle(row, "suppressed", reason) and by is not None and row.origin_turn_id != stopped_turn:
                self._tell_stopped(row, reason, by)
        stopped = self._stopped_deliveries.pop(agent_session_id, 0)
        return stopped + sum(1 for row in running if not any(t.subagent_id in live for t in row.tasks))

    def _tell_stopped(self, row: DelegationRow, reason: str, by: Inbound) -> None:
        """Tell the member who asked for ``row``'s delegation that another member's ``/stop`` or ``/new``
        (``reason``) ended it, quoting their request: only the stopper reads the command's answer, and the card,
        where there is one, reads "Stopped" without a name. Nothing for the stopper's own, in a private chat, or
        when the asker is no longer known. What the store refuses of the note, the asker's message read back too, is
        logged: the stop stands, and goes on to the delegations after this one."""
        platform, chat_id, thread_id = split_session_key(row.session_key)
        if by.is_private:
            return
        try:
            if (asking := self._asking(platform, row)) is None or asking.user_id == by.user_id:
                return
            self._outbox.enqueue(platform, chat_id, thread_id, stopped_by_member(reason.lstrip("/"), by),
                                 kind="completion", key=f"{row.completion_turn_id}:stopped",
                                 turn_id=row.completion_turn_id, reply_to=quote_of(asking))
        except sqlite3.Error as exc:
            log.warning("delegation %s: could not tell its asker who stopped it (%s: %s)", row.delegation_id,
                        type(exc).__name__, exc)

    def _live(self, agent_session_id: str) -> set[str]:
        """The session generation's children still at work. A finishing child is past any stop (its activity says
        so): its results are as good as ready."""
        return {c.subagent_id for c in self._children.children(agent_session_id) if c.activity != "finishing"}

    def ready_for_others(self, session: GatewaySession, stopper: Inbound) -> set[str]:
        """In a group, the session generation's delegations whose results are ready (no child left at work) and not
        delivered yet, which another member than ``stopper`` asked for (`asked_by`): they wait for a turn as that
        member's messages do, which a stop from ``stopper`` spares; none in a private chat. Not the one the running
        turn answers (a stop ends that turn, whoever asked). One whose asker is no longer known is not among them."""
        if stopper.is_private:
            return set()
        answering = session.running.delegation_id if session.running is not None else None
        live = self._live(session.session_id)
        return {row.delegation_id for row in self._table.running_of(session.session_id)
                if row.delegation_id != answering and not any(t.subagent_id in live for t in row.tasks)
                and self.asked_by(session.platform, row) not in (None, stopper.user_id)}

    def asked_by(self, platform: str, row: DelegationRow) -> str | None:
        """The user id of whoever sent the message that asked for ``row``'s delegation (`_asking`)."""
        event = self._asking(platform, row)
        return event.user_id if event is not None else None

    def _asking(self, platform: str, row: DelegationRow) -> Inbound | None:
        """The message that asked for ``row``'s delegation, while the inbox remembers it (a week). One a completion
        turn dispatched (its results answered) was asked for by the message that asked for the delegation that turn
        answered; ``/retry``'s by the one that asked for the delegation it runs again."""
        seen: set[str] = set()
        turn = row.origin_turn_id
        while turn.startswith(COMPLETION_TURN_PREFIX) and turn not in seen:
            seen.add(turn)
            answered = self._table.get(turn.removeprefix(COMPLETION_TURN_PREFIX))
            if answered is None:
                return None
            turn = answered.origin_turn_id
        return self._inbox.event_of_turn(platform, turn)

    def running_origins(self, agent_session_id: str) -> dict[str, str]:
        """The session generation's delegations not settled yet: delegation id -> the turn that dispatched it."""
        return {row.delegation_id: row.origin_turn_id for row in self._table.running_of(agent_session_id)}

    def completion_ended(self, delegation_id: str, status: str, reason: str | None) -> None:
        """The turn runner's word that a delegation's completion turn is over (see `TurnRunner`). Raises what
        the store refuses of the settle (the turn's end is then owed), its mark as begun lifted first
        (`completion_over`)."""
        row = self._table.get(delegation_id)
        try:
            settled = row is not None and self._settle(row, status, reason)  # type: ignore[arg-type]
        except sqlite3.Error:
            self.completion_over(delegation_id)
            raise
        if settled and reason in STOPS:
            sid = row.agent_session_id
            self._stopped_deliveries[sid] = self._stopped_deliveries.get(sid, 0) + 1

    def _settle(self, row: DelegationRow, status: Status, reason: str | None = None) -> bool:
        """Settle ``row`` unless it was settled already (the first outcome stands); whether it was now.
        Raises what the store refuses of the settle: nothing is settled then, and the card keeps its tally for
        the settle tried again (an owed turn end's). Not what it refuses of the card's final edit, once the settle
        went through: that edit is journaled later (`DelegationCards.finish`), and a stop goes on to settle the
        session's other delegations."""
        if not self._table.settle(row.delegation_id, status, reason):
            self._endings.pop(row.delegation_id, None)  # its card was finished with the first outcome
            return False
        ended = self._endings.pop(row.delegation_id, "")
        settled = dataclasses.replace(row, status=status, reason=reason)
        self._cards.finish(settled, outcome(settled), ended)
        return True

    # -- after a restart -------------------------------------------------------------------

    async def forget_replayed(self, turn_ids: set[str]) -> int:
        """Before turns a stopped process left unfinished run again: the delegations they had
        dispatched are moot (the turn starts over and delegates anew), so they deliver nothing.
        Then every child still at work (on an engine whose children outlive the process) whose
        results nothing would deliver is stopped as a graceful stop stops it, INTERRUPTED by
        process exit with its partial output: followed on, it would run to its end for no one,
        its work done twice. Those are the children the turns run again had launched (their
        delegations', and those of a delegation the process died before recording: launched,
        then killed before `dispatched`), and those a relaunch launched that its delegation does
        not name (by an earlier version, which recorded a relaunch in a commit after its launch's,
        killed between the two: the row still names the lost children, which `resume` launches again).
        Not the children the turns run again launch anew: this
        returns before those turns run. Not a plugin's children of a turn that ended, which run
        on across a restart; nor one asked to stop before (its stop stands). Returns how many
        delegations were settled; returns before the children have stopped."""
        forgotten = [row for row in self._table.running() if row.origin_turn_id in turn_ids]
        for row in forgotten:
            self._settle(row, "suppressed", "replayed")
        strays = self._strays(turn_ids, forgotten)
        replayed = unrecorded = 0
        for sid, (session_id, of_replayed_turn) in strays.items():
            if await self._children.interrupt_child(sid, PROCESS_EXIT, parent_session_id=session_id,
                                                    unless_stopping=True):
                replayed += of_replayed_turn
                unrecorded += not of_replayed_turn
        said = [f"{replayed} subagent(s) of delegations whose turns run again"] if replayed else []
        if unrecorded:
            said.append(f"{unrecorded} subagent(s) launched again that no delegation records (the process "
                        "stopped first)")
        if said:
            log.info("%s are being stopped", " and ".join(said))
        return len(forgotten)

    def _strays(self, turn_ids: set[str], forgotten: Sequence[DelegationRow]) -> dict[str, tuple[str, bool]]:
        """What `forget_replayed` stops: subagent id -> (its session, whether its turn runs again). Read
        whole before any stop is awaited, so no child launched meanwhile is taken for one. On the in-process
        engine no child outlives a restart: the forgotten rows' children are unknown, and no live child
        is looked at (at most those of turns begun since the start, none of them stray)."""
        strays = {t.subagent_id: (row.agent_session_id, True) for row in forgotten for t in row.tasks}
        of_turn: dict[str, list[DelegationRow]] = {}
        for session_id in self._children.sessions_with_children():
            for child in self._children.children(session_id):
                turn = child.parent_turn_id
                if child.subagent_id in strays or not turn:
                    continue
                if turn in turn_ids:  # also one of a delegation the process died before recording
                    strays[child.subagent_id] = (session_id, True)
                    continue
                if (session_id, turn) in self._relaunching:  # being recorded now: not stray
                    continue
                if turn not in of_turn:
                    of_turn[turn] = self._table.of_turn(turn)
                # A relaunch's children carry their delegation's origin turn and their task's goal: a
                # child alike that no row names was launched again by a process that died before recording
                # it. A plugin's child of a turn that delegated too is told apart by its own goal.
                tasks = [t for row in of_turn[turn] if row.agent_session_id == session_id for t in row.tasks]
                if (all(t.subagent_id != child.subagent_id for t in tasks)
                        and any(t.goal == child.goal for t in tasks)):
                    strays[child.subagent_id] = (session_id, False)
        return strays

    async def resume(self, platforms: Collection[str]) -> None:
        """Settle or take up every delegation a stopped process left running in a chat of the ``platforms``
        configured now. One of another platform's chats is kept as it is, until a start configures it again:
        its results could reach no one, and a relaunch would run its children for no one. A table the
        database cannot read now is logged, and nothing resumed in this run: the start has begun turns
        already (replayed events, the chats' new messages), which a raise would cut short; the rows stay
        unsettled for the next start, as a row that fails alone does."""
        try:
            rows = self._table.running()
        except Exception:  # an I/O error; a row that fails alone is logged likewise, below
            log.exception("reading the background delegations left running failed; none is resumed now, they "
                          "are taken up at the next start")
            return
        for row in rows:
            if (split_session_key(row.session_key)[0] not in platforms or row.delegation_id in self._held
                    or row.delegation_id in self._taken_up):
                continue
            try:
                await self._resume(row)
            except Exception:
                log.exception("resuming background delegation %s failed", row.delegation_id)

    def places(self, rows: Sequence[DelegationRow], running: Collection[str]) -> QueuePlaces:
        """Where the completion turns of ``rows`` were in their chats' queues when the last process ended: ahead
        of every event for one that was running (``running``: `DelegationTable.deliveries_running`), else behind
        the events the inbox had recorded when it was queued (`DelegationTable.queue_delivery`). Kept through
        every start that takes them up there (`resume_first`), until they run again. One never queued is left
        out: `resume` takes it up after the replayed events."""
        queued = self._table.delivery_places()
        chats: dict[str, list[tuple[int, DelegationRow]]] = {}
        for row in rows:
            place = RUNNING if row.delegation_id in running else queued.get(row.delegation_id)
            if place is not None:
                chats.setdefault(row.session_key, []).append((place, row))
        return QueuePlaces({key: sorted(placed, key=lambda p: p[0]) for key, placed in chats.items()})

    async def resume_first(self, rows: Sequence[DelegationRow]) -> None:
        """Take up, before the start replays the next of their chats' messages, the delegations (``rows``) whose
        completion turn was running or queued ahead of it when the last process ended (`places`): their results
        are queued at once, so that each runs again where it was, not after the messages that waited behind it
        (whose turns would answer without having read the results), keeping that place for a start after this
        process dies too. `resume` then leaves them be. As `resume`, a row that fails is logged and kept,
        unsettled, for the next start."""
        for row in rows:
            if row.delegation_id in self._held or row.delegation_id in self._taken_up:
                continue
            self._taken_up.add(row.delegation_id)
            try:
                await self._resume(row, at_once=True)
            except Exception:
                log.exception("resuming background delegation %s failed", row.delegation_id)

    async def _resume(self, row: DelegationRow, *, at_once: bool = False) -> None:
        """``at_once``: its results are queued before this returns, in the place they had, when its children have
        all finished."""
        found = await self._children.lookup([t.subagent_id for t in row.tasks])
        if not found:
            # Its children were never journaled: the launch's commit failed and a later one wrote the row
            # alone, before the process died (`_discard`). Nothing ran; the model was told it did not start.
            self._table.discard(row.delegation_id)
            log.info("background delegation %s was never launched; its row is removed", row.delegation_id)
            return
        stored = self._sessions.load(row.session_key)
        if stored is None or stored.session_id != row.agent_session_id:
            self._settle(row, "suppressed", "/new")
            return
        lost = [t for t in row.tasks if _lost_to_restart(found.get(t.subagent_id))]
        if not lost and at_once and all(child.state.terminal for child in found.values()):
            try:
                await self._deliver(row, in_place=True)
            except Exception:  # a store that fails meanwhile: tried again, backing off, as `_watch` does
                log.error("delegation %s: handing its results on failed; trying again in %.1fs", row.delegation_id,
                          BACKOFF_FIRST, exc_info=True)
                self._watch(row, BACKOFF_FIRST)
            return
        if not lost:
            self._watch(row)  # finished (or still running on an engine that survives restarts)
            if any(not child.state.terminal for child in found.values()):
                # Children that outlived the process: the card it left must follow them again, or it reads
                # `0 of 3 done — 5 s` until they all finish. The same message (keyed by the delegation).
                session = self._registry.get(*split_session_key(row.session_key))
                self._cards.start(row, session, resumed=True)
            return
        retry = [t for t in lost if t.attempts < self._settings.max_attempts]
        if self._settings.on_restart == "resume" and retry:
            log.info("relaunching %d subagent(s) of %s interrupted by the restart", len(retry), row.delegation_id)
            session = self._registry.get(*split_session_key(row.session_key))
            try:
                row = await self._relaunch(session, row, retry)
            except SubagentLifecycleError as exc:  # e.g. a route no longer configured: tell the chat instead
                # The route's refusal, which is what to mend: the error itself names the task by its goal, the
                # model's words (a user's, often), for the chat to read, and the log is the operator's.
                log.warning("cannot relaunch %s: %s", row.delegation_id, exc.__context__ or exc)
            except sqlite3.Error:  # the relaunched children were stopped (logged): tell the chat instead
                pass
            else:
                self._watch(row)
                return
        self._report(row, found, lost)

    def _report(self, row: DelegationRow, found: Mapping[str, ChildSnapshot], lost: Sequence[LedgerTask]) -> None:
        """One message for the delegation: which children the restart interrupted, with the
        partial output they had, what the others found, and how to run them again."""
        platform, chat_id, thread_id = split_session_key(row.session_key)
        resume = self._settings.on_restart == "resume"
        lines = ["⚠️ The gateway restarted while subagents were working on this."]
        for task in row.tasks:
            child = found.get(task.subagent_id)
            if task in lost:
                partial = _short(child.summary if child else None, 200) or "no output yet"
                gave_up = f" (lost after {task.attempts} attempt{'' if task.attempts == 1 else 's'})" if resume else ""
                lines.append(f"• Interrupted{gave_up}: {_short(task.goal, 80)} — partial output: {partial}")
            elif child is not None:
                lines.append(f"• {child.state.value.lower().capitalize()}: {_short(task.goal, 80)} — "
                             f"{_short(child.summary or child_failure_reason(child.error or ''), 200) or 'no output'}")
        latest = self._table.latest(row.agent_session_id, 1)
        if latest and latest[0].delegation_id == row.delegation_id:
            # What /retry runs again (`_retry`): the failed and cancelled ones too, not only the restart's.
            ended = {"interrupted" if task in lost else found[task.subagent_id].state.value.lower()
                     for task in row.tasks if task in lost or _failed(found.get(task.subagent_id))}
            lines.append(f"Send /retry to run the {_and(w for w in RETRIED if w in ended)} ones again.")
        else:  # /retry takes up only the chat's latest delegation, not this one
            ids = ", ".join(t.subagent_id for t in lost)
            lines.append(f"Send /agents retry ID to run one of them again ({ids}).")
        self._outbox.enqueue(platform, chat_id, thread_id, "\n".join(lines), kind="completion",
                             key=f"{row.completion_turn_id}:report", turn_id=row.completion_turn_id,
                             reply_to=self._asked(platform, row))
        self._settle(row, "reported")

    # -- delivering ------------------------------------------------------------------------

    def _watch(self, row: DelegationRow, pause: float = 0.0) -> None:
        if row.delegation_id in self._watching:
            return
        task = asyncio.ensure_future(self._deliver_when_done(row, pause))
        self._watching[row.delegation_id] = task
        task.add_done_callback(lambda _: self._watching.pop(row.delegation_id, None))

    @property
    def watching(self) -> int:
        """Delegations whose children are still being waited for."""
        return len(self._watching)

    async def close(self) -> None:
        self._cards.close()
        tasks = [*self._watching.values(), *self._aside]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _deliver_when_done(self, row: DelegationRow, pause: float = 0.0) -> None:
        """Hand the delegation's results on once its children are done (and ``pause`` has passed: a
        completion turn tried again). A store that fails meanwhile (a full disk) is tried again, backing
        off, rather than leaving the results for the next start."""
        if pause:
            await self._clock.sleep(pause)
        delay = BACKOFF_FIRST
        while True:
            try:
                await self._deliver(row)
                return
            except Exception:
                log.error("delegation %s: handing its results on failed; trying again in %.1fs",
                          row.delegation_id, delay, exc_info=delay == BACKOFF_FIRST)
            await self._clock.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _deliver(self, row: DelegationRow, *, in_place: bool = False) -> None:
        """Hand the delegation's results on as a completion turn queued in its chat, its place there recorded for a
        start after a death (`DelegationTable.queue_delivery`); ``in_place``: a start takes it up where the last
        process had it (`resume_first`), which stays its place."""
        ids = [t.subagent_id for t in row.tasks]
        agent = self._registry.get(*split_session_key(row.session_key)).agent
        scope = agent.services.get(FILE_SCOPE)  # a full summary is kept in the chat's own folder
        routes = {t.subagent_id: t.spec["route"] for t in row.tasks if t.spec.get("route")}
        goals = [_goal_excerpt(t.goal) for t in row.tasks]
        entries = await self._children.finished_entries([(t.task_index, t.subagent_id) for t in row.tasks],
                                                        agent.workspace, routes=routes,
                                                        folder=scope.own if scope is not None else None,
                                                        total_tokens=_results_budget(agent.model, goals,
                                                                                     agent.tool_schemas()))
        current = self._table.get(row.delegation_id)
        if current is None or current.status != "running":
            return  # /stop or /new settled it meanwhile
        session = self._registry.get(*split_session_key(current.session_key))
        if session.session_id != current.agent_session_id:
            self._settle(current, "suppressed", "/new")
            return
        found = await self._children.lookup(ids)
        payload = {"delegation_id": current.delegation_id, "goals": goals, "results": entries}
        notes = tuple(_failure_line(t, found.get(t.subagent_id)) for t in current.tasks
                      if _failed(found.get(t.subagent_id)))
        text = COMPLETION_PREFIX + json.dumps(payload, ensure_ascii=False)
        # Only a completion turn submitted here is delivered (after a restart too: `resume` hands the
        # results on again, looking the children up in the journal), so its card's tally is known by then.
        self._endings[current.delegation_id] = child_states.endings(found.get(t.subagent_id) for t in current.tasks)
        if not in_place:
            self._queued(current.delegation_id)
        self._runner.submit(session, WorkItem("completion", text, current.completion_turn_id,
                                              delegation_id=current.delegation_id, notes=notes,
                                              quote=self._asked(session.platform, current)))

    def _queued(self, delegation_id: str) -> None:
        """Record where the delegation's completion turn is queued. What the store refuses of it is logged, and the
        results are handed on all the same: the place only orders a start after a death."""
        try:
            self._table.queue_delivery(delegation_id)
        except sqlite3.Error as exc:
            log.warning("delegation %s: could not record where its results wait in the chat (%s: %s); should the "
                        "gateway die before they are answered, they are answered after the chat's messages replayed",
                        delegation_id, type(exc).__name__, exc)

    def _asked(self, platform: str, row: DelegationRow) -> str | None:
        """The message that asked for the delegation, for its results to quote (`quote_of`), while the
        inbox remembers it (a week). The platform may not have it any more (deleted meanwhile): the
        adapter then sends the results unquoted."""
        return quote_of(self._inbox.event_of_turn(platform, row.origin_turn_id))

    # -- /retry ------------------------------------------------------------------------------

    async def retry(self, session: GatewaySession) -> str:
        """Run the interrupted or failed children of the session's latest background delegation
        again, with the same tasks, as a new delegation; says what it did, or why it did nothing."""
        # One at a time: a second /retry sent at once must find the first one's delegation (running) as
        # the latest, not the same failed children to launch a second time.
        async with self._retrying:
            return await self._retry(session)

    async def _retry(self, session: GatewaySession) -> str:
        rows = self._table.latest(session.session_id, 1)
        if not rows:
            return "Nothing to retry: no background work has been delegated in this session."
        row = rows[0]
        if row.status == "running" and row.delegation_id in self._watching:
            return "Nothing to retry yet: the latest background delegation is still running."
        found = await self._children.lookup([t.subagent_id for t in row.tasks])
        again = [t for t in row.tasks if _failed(found.get(t.subagent_id)) or t.subagent_id not in found]
        if not again:
            return "Nothing to retry: every subagent of the latest background delegation succeeded."
        # One a stopped process left that the start has not taken up yet (this may be the /retry it was
        # launched for, handled again: its launch and record committed, its answer not): its children run
        # again in its place, not in a delegation beside it, which the start would relaunch or report too.
        in_place = self._left_by_restart(row, found)
        retry_row = row if in_place else DelegationRow(
            _retry_id(row.delegation_id), session.key, session.session_id, row.origin_turn_id, self._clock.time(),
            (), "running")
        try:
            retry_row = await self._relaunch(session, retry_row, again, add=not in_place)
        except SubagentLifecycleError as exc:
            return _not_retried(exc, "/retry")
        except sqlite3.Error:  # logged, and the children launched were stopped
            return RETRY_NOT_RECORDED.format(command="/retry")
        if in_place:
            self._taken_up.add(row.delegation_id)
        self._watch(retry_row)
        goals = "; ".join(_short(t.goal, 60) for t in again)
        return f"Retrying {len(again)} subagent{'s' if len(again) != 1 else ''}: {goals}. The results will follow."

    def task_of(self, session: GatewaySession, subagent_id: str) -> tuple[DelegationRow, LedgerTask] | None:
        """The background delegation and task of the session generation that this child ran."""
        for row in self._table.latest(session.session_id, LOOKBACK):
            for task in row.tasks:
                if task.subagent_id == subagent_id:
                    return row, task
        return None

    async def retry_one(self, session: GatewaySession, subagent_id: str, task: ChildSpec | None,
                        origin_turn_id: str) -> str:
        """``/agents retry``: run one child's task again as a background delegation of its own (its
        result arrives as a message, also for a child that ran inline). The task is the ledger's
        when the child ran in the background, else ``task``."""
        known = self.task_of(session, subagent_id)
        if known is None and task is None:
            return f"{subagent_id} cannot be run again: its task is no longer known."
        ledger_task = known[1] if known is not None else LedgerTask(task.task_index, subagent_id, _spec_json(task), 0)
        left = await self._left_running(session, origin_turn_id, ledger_task)
        if left is not None:  # run again in the place of the copy a restart lost, as `_retry` does
            row, ledger_task = left
        else:
            base = known[0].delegation_id if known is not None else new_id("deleg_")
            row = DelegationRow(_retry_id(base), session.key, session.session_id, origin_turn_id, self._clock.time(),
                                (), "running")
        try:
            row = await self._relaunch(session, row, [ledger_task], add=left is None)
        except SubagentLifecycleError as exc:
            return _not_retried(exc, f"/agents retry {subagent_id}")
        except sqlite3.Error:  # logged, and the child launched was stopped
            return RETRY_NOT_RECORDED.format(command=f"/agents retry {subagent_id}")
        if left is not None:
            self._taken_up.add(row.delegation_id)
        self._watch(row)
        new = next(t.subagent_id for t in row.tasks if t.task_index == ledger_task.task_index)
        return f"Retrying {subagent_id} as {new}: {_short(ledger_task.goal, 60)}. The result will follow."

    def _left_by_restart(self, row: DelegationRow, found: Mapping[str, ChildSnapshot]) -> bool:
        """Whether ``row`` is a delegation a stopped process left with children the restart lost, which the
        start has not taken up (`resume`) yet: the start relaunches or reports those children itself."""
        return (row.status == "running" and row.delegation_id not in self._watching
                and row.delegation_id not in self._taken_up
                and any(_lost_to_restart(found.get(t.subagent_id)) for t in row.tasks))

    async def _left_running(self, session: GatewaySession, origin_turn_id: str,
                            task: LedgerTask) -> tuple[DelegationRow, LedgerTask] | None:
        """A delegation of the session generation a stopped process left, not taken up yet, whose child for
        ``task`` (the same task of the same turn) the restart lost; with that task as it records it."""
        for row in self._table.running_of(session.session_id):
            if row.origin_turn_id != origin_turn_id or row.delegation_id in self._watching:
                continue
            same = [t for t in row.tasks if t.task_index == task.task_index and t.spec == task.spec]
            if not same:
                continue
            found = await self._children.lookup([t.subagent_id for t in row.tasks])
            if self._left_by_restart(row, found) and _lost_to_restart(found.get(same[0].subagent_id)):
                return row, same[0]
        return None

    async def _relaunch(self, session: GatewaySession, row: DelegationRow, tasks: Sequence[LedgerTask], *,
                        add: bool = False) -> DelegationRow:
        """Launch ``tasks`` again and record their children: as the tasks of ``row``, a new delegation
        (``add``), or in place of the children of ``row``'s that a restart lost. The record is written into
        the batch that commits the children's PENDING rows (`HostView.relaunch`'s ``before_commit``), so both
        are on disk or neither is: written in a later commit, a crash or a full disk between the two left
        children running whose results nothing delivered, or a row naming children that never ran. Returns
        the row as recorded. Raises `SubagentLifecycleError` when nothing was launched (a route no longer
        configured, a launch the journal refused, a full disk's): what the record wrote is undone then
        (`_undo`: a new row removed, a row taken up after a restart pointed back at the lost children, for
        the next start to relaunch or report). Raises what the store raises when the record itself cannot be
        written (a write refused), once the children launched are asked to stop: the row left as it was,
        nothing would deliver their results or tell the chat they ran."""
        specs = [_spec(t) for t in tasks]
        key = (session.session_id, row.origin_turn_id)
        recorded: list[DelegationRow] = []
        refused: list[Exception] = []

        def record(ids: Sequence[str]) -> None:  # in the launch's batch; must not raise
            fresh = {t.task_index: dataclasses.replace(t, subagent_id=sid, attempts=t.attempts + 1)
                     for t, sid in zip(tasks, ids, strict=True)}
            if add:
                new = dataclasses.replace(row, tasks=tuple(fresh.values()))
            else:
                new = dataclasses.replace(row, tasks=tuple(fresh.get(t.task_index, t) for t in row.tasks))
            try:
                if add:
                    self._table.add(new)
                else:
                    self._table.replace_tasks(row.delegation_id, new.tasks)
            except Exception as exc:  # a statement that raised wrote nothing, now or later
                refused.append(exc)
            else:
                recorded.append(new)

        self._relaunching[key] = self._relaunching.get(key, 0) + 1
        try:
            ids = await self._children.relaunch(session.agent, row.origin_turn_id, specs, before_commit=record)
        except BaseException:
            if recorded:  # written in a batch that did not commit its children, or whose wait was given up
                self._undo(row, add)
            raise
        finally:  # nothing is awaited from its return until the row names its children, or they are stopped
            if self._relaunching[key] == 1:
                del self._relaunching[key]
            else:
                self._relaunching[key] -= 1
        if refused:
            exc = refused[0]
            # Recorded nowhere, they would run for no one (nothing delivers their results or says they ran):
            # stopped, as the children of a background dispatch the ledger cannot record are (`dispatched`).
            log.warning("could not record the %d subagent(s) launched again for delegation %s (%s: %s): they are "
                        "being stopped", len(ids), row.delegation_id, type(exc).__name__, exc,
                        exc_info=not isinstance(exc, sqlite3.Error))
            for sid in ids:
                await self._children.interrupt_child(sid, NOT_RECORDED, parent_session_id=session.session_id)
            raise exc
        [row] = recorded
        # Children run again: the chat follows them on a card like any background delegation's (after a
        # restart, the card the stopped process left is taken up again instead of staying stale).
        self._cards.start(row, session, resumed=not add)
        return row

    def _undo(self, row: DelegationRow, added: bool) -> None:
        """Undo the record of a relaunch that was not launched: remove the row it added (`_discard`), or point
        the row it took up back at the children the restart lost, for the next start to relaunch or report
        (left naming children never journaled, that start would take the delegation for one never launched,
        and forget it without a word to the chat). Tried again until it goes through, as `_discard` is: a full
        disk rolled the record back with the launch, but the database writes it again once it can."""
        if added:
            self._discard(row.delegation_id)
            return
        try:
            self._table.replace_tasks(row.delegation_id, row.tasks)
        except sqlite3.Error as exc:
            log.warning("the subagents of delegation %s were not launched again, and its row cannot be pointed "
                        "back at the lost ones yet (%s); trying again", row.delegation_id, exc)
            self._later(lambda: self._table.replace_tasks(row.delegation_id, row.tasks))

    # -- reading -------------------------------------------------------------------------------

    async def listing(self, session: GatewaySession, limit: int = 3) -> list[tuple[DelegationRow, dict]]:
        """The session generation's latest delegations with their children's snapshots."""
        rows = self._table.latest(session.session_id, limit)
        return [(row, await self._children.lookup([t.subagent_id for t in row.tasks])) for row in rows]

    def latest(self, session: GatewaySession, limit: int) -> list[DelegationRow]:
        """The session generation's latest delegations, newest first (no children looked up)."""
        return self._table.latest(session.session_id, limit)

    def of_turn(self, turn_id: str) -> list[DelegationRow]:
        """The delegations a turn dispatched, oldest first."""
        return self._table.of_turn(turn_id)


LOOKBACK = 100
"""Delegations of a session generation searched for a child's task."""
NOT_RECORDED = "the delegation could not be recorded"
"""The error a child launched again ends with when the store refused its delegation (`Ledger._relaunch`), as
one a background dispatch launched does (`lifecycle.delegate_tool`)."""
RETRY_NOT_RECORDED = (
    "Nothing was retried: the state database cannot be written right now, so the retry could not be recorded, "
    "and nothing of it runs. Send {command} again later."
)


def _not_retried(exc: SubagentLifecycleError, command: str) -> str:
    """What a retry that launched nothing answers. A launch whose commit the state database refused (a full disk:
    the journal's error, SQLite's as its cause) is told as a record it refused is, not in the journal's words."""
    if isinstance(exc.__cause__, sqlite3.Error):
        return RETRY_NOT_RECORDED.format(command=command)
    return f"Nothing was retried: {exc}."


def _goal_excerpt(goal: str) -> str:
    """``goal`` as a completion turn gives it back: its start (`COMPLETION_GOAL_CHARS`), saying what was left out."""
    head = at_word(goal, COMPLETION_GOAL_CHARS)
    if head == goal:
        return goal
    return f"{head} [... {len(goal) - len(head):,} more characters of the goal not shown; the subagent had it whole]"


def _results_budget(model: Any, goals: Sequence[str], schemas: Sequence[Mapping[str, Any]] = ()) -> int:
    """Tokens a completion turn's results may come to together: the share of what the parent model's context window
    leaves beside its tools' ``schemas`` that compaction gives the results of one answer (`ANSWER_RESULTS_SHARE`),
    less what the goals and the turn's preamble take. The turn's message is the newest, which compaction keeps
    whole: over the window, the model could never answer it. The schemas count there as they do in compaction: half
    the window, on a 4,096-token one with the built-in tools' 1,200 and a summary, was more than the window left."""
    taken = weight(COMPLETION_PREFIX + json.dumps(goals, ensure_ascii=False)) // 8
    return max(0, (context_window(model) - schema_tokens(schemas)) // ANSWER_RESULTS_SHARE - taken)


def _spec_json(spec: ChildSpec) -> dict[str, Any]:
    data = dataclasses.asdict(spec)
    data["metadata"] = dict(spec.metadata)
    data["output_schema"] = None if spec.output_schema is None else json.loads(json.dumps(spec.output_schema))
    return data


def _spec(task: LedgerTask) -> ChildSpec:
    data = dict(task.spec)
    toolsets, images = data.get("allowed_toolsets"), data.get("images") or ()
    return ChildSpec(**{**data, "allowed_toolsets": tuple(toolsets) if toolsets is not None else None,
                        "images": tuple(images), "task_index": task.task_index})


def _lost_to_restart(child: ChildSnapshot | None) -> bool:
    return child is None or (child.state is S.INTERRUPTED and child.error == PROCESS_EXIT)


def _failed(child: ChildSnapshot | None) -> bool:
    return child is None or child.state in FAILED


def _failure_line(task: LedgerTask, child: ChildSnapshot | None) -> str:
    reason = child_failure_reason((child.error if child is not None else None) or "its result is no longer available")
    return f"⚠️ Subagent failed: {_short(task.goal, 80)}: {_short(reason, 160)}"


def _and(words: Iterable[str]) -> str:
    """``interrupted, failed and cancelled``."""
    *rest, last = words
    return f"{', '.join(rest)} and {last}" if rest else last


def _retry_id(delegation_id: str) -> str:
    return new_id(f"{delegation_id.split('~', 1)[0]}~r")
