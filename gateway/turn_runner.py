"""Running a session's turns, one at a time, and deciding what the user sees of each.

Interim assistant text goes out as ``interim`` messages (when resolved on) and is
never mistaken for the final reply; typing stays on while the turn runs (but
while it waits for its model to come back, as its progress notices do), and a
typing request still on the wire is answered before the reply goes; the
long-running notifier is armed for this turn only and disarmed before the final
reply is queued; a suppressed turn (stopped, reset, or interrupted by a
follow-up) sends nothing more. The gateway's turn id is the agent's turn id: the
children a turn launches name it as their parent turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from agent import AgentSession, Clock, TurnResult
from agent._errors import server_down
from agent._token_estimate import pictures_tokens
from agent.models._outage import waiting_when_down
from agent.settings import ModelSettings
from gateway import late_notes, senders
from gateway.attachments import chat_folder, turn_input
from gateway.display import TurnDisplay
from gateway.events import GatewayEvents
from gateway.idle_owed_ends import PAY_AGAIN_FIRST, PAY_AGAIN_MAX, IdleOwedEnds
from gateway.left_behind import STUCK_WAIT_SECONDS, cancel_within
from gateway.logging import log_context
from gateway.notices import Notifier, final_text
from gateway.outbox import Outbox
from gateway.owed_ends import OwedEnds, answer_shown, answered_before, reply_journaled
from gateway.progress_card import ProgressCard
from gateway.replies import (
    SILENCE,
    SUMMARY_FAILED,
    SUPPRESSED_NOTES,
    SUPPRESSED_REASONS,
    UNASKED_STOPS,
    down_waiting_text,
    outcome,
    pictures_in,
    reply_text,
)
from gateway.session_registry import SessionRegistry
from gateway.sessions import EndMessage, GatewaySession, OwedEnd, RunningTurn, WorkItem, new_turn_id, quote_of
from gateway.store import Inbox
from gateway.turn_progress import Observer, TurnProgress
from gateway.turn_refusals import UNSETTLED, Refusals, owed_by
from lifecycle import HostView
from platforms.base import Adapter, Inbound

log = logging.getLogger("gateway.turn_runner")

T = TypeVar("T")

CompletionEnded = Callable[[str, str, str | None], None]
"""``completion_ended(delegation_id, status, reason)``: a completion turn is over: its results were
delivered, or silenced (``NO_REPLY``, ``/stop``, ``/new``). Called in the commit of its reply."""
TRACKS_TURN_IDS = frozenset({"webhook"})
"""Platforms whose callers follow each turn id: a turn cut short still ends with a short note."""
SAYS_SUPERSEDED = frozenset({"local"})
"""Platforms where a turn stopped for the next message says so even when its progress message never showed (the
terminal: no typing indicator, nothing else of the turn on screen). Stopped before its first notice, it vanished
without a line: lost, stopped or still running, the screen could not tell. Elsewhere typing runs on into the next
message's answer, which the model writes reading both: only a turn that showed messages of its own says so
(`TurnProgress.showed_messages`)."""
Failed = Callable[[Inbound, str | None, BaseException], object]
"""``failed(event, turn_id, error)``: handling ``event`` failed (`gateway.dead_letters`: tried again, or set aside)."""
CompletionFailed = Callable[[str, BaseException], None]
"""``completion_failed(delegation_id, error)``: a completion turn's handling failed (`Ledger.completion_failed`)."""
Abandoned = Callable[[GatewaySession, str], None]
"""``abandoned(session, turn_id)``: a turn's handling failed; what it delegated is moot (`Ledger.abandon`)."""
TYPING_FINISH_SECONDS = 1.5
"""How long a turn's end waits, on its clock, for a typing request already on the wire to be answered before
its reply is queued, where nothing clears the indicator (`typing_lapses`): one the platform gets after the reply
shows "typing…" under the answer (Telegram ~5 s, Discord ~10 s), and a cancelled request may reach it all the
same. Past this it is cancelled."""
MODEL_DOWN = ("Sorry — the model is unreachable at the moment: it has failed every request for a while, "
              "so I did not ask it again. Please send your message again in a few minutes.")
"""What a chat reads of a turn whose model call was not sent, its server known to be down (`agent.models._outage`), once
it waited ``model.wait_when_down_seconds`` for it to come back (`gateway.replies.MODEL_DOWN_WAITING`):
"try again in a moment" (`gateway.replies.MODEL_FAILED`) is wrong advice then, the next moment's call not being sent
either (`_down_reply`)."""



class TurnRunner:
    """Owns each session's worker task: it exists while the session's queue has work."""

    def __init__(self, registry: SessionRegistry, outbox: Outbox, inbox: Inbox, *, children: HostView,
                 display: Callable[[str], TurnDisplay], adapters: Mapping[str, Adapter], clock: Clock,
                 completion_ended: CompletionEnded, model: ModelSettings,
                 events: GatewayEvents | None = None, late_after: float = 0.0,
                 durable: Callable[[], Awaitable[None]],
                 transaction: Callable[[], contextlib.AbstractContextManager[object]],
                 failed: Failed = lambda event, turn_id, exc: True,
                 completion_begun: Callable[[str], None] = lambda delegation_id: None,
                 completion_failed: CompletionFailed = lambda delegation_id, exc: None,
                 abandoned: Abandoned = lambda session, turn_id: None) -> None:
        """``transaction``: the store's, for the owed turn ends a refusal must not split (`OwedEnds`).
        ``failed``: the dead letters' count of an event whose turn broke (`_broke`); ``completion_failed``
        the ledger's of a completion turn's, ``completion_begun`` its mark that one began (made durable before
        it runs, as a message's is), and ``abandoned`` its drop of what a turn that broke delegated."""
        self._registry = registry
        self._failed = failed
        self._completion_begun = completion_begun
        self._completion_failed = completion_failed
        self._abandoned = abandoned
        self._outbox = outbox
        self._inbox = inbox
        self._durable = durable
        """The store's group commit: a turn's event is marked begun durably before the turn runs."""
        self._completion_ended = completion_ended
        self._model = model
        """For attachments: whether and how voice messages are transcribed."""
        self._progress = TurnProgress(outbox, children, clock)
        self._display = display
        self._adapters = adapters
        self._clock = clock
        self._events = events or GatewayEvents()
        self._late_after = late_after
        """A message that waited this long for its turn is answered with a note saying so (0: never)."""
        self._workers: dict[GatewaySession, asyncio.Task[None]] = {}
        self._cards: dict[GatewaySession, ProgressCard] = {}
        """The running turn's progress card, per session that shows one."""
        self._stopping = False
        self._stop_began = False
        self._replays: set[str] = set()
        """Ids of turns an earlier run may have begun, not begun again yet (`RunningTurn.replay`)."""
        self._read_on_replay: dict[str, list[WorkItem]] = {}
        """By turn id: messages an earlier run of the turn read, steered in, to steer into it again
        (`read_on_replay`)."""
        self._apart: set[tuple[str, str]] = set()
        """By (platform, event id): the messages `_own_turn` gave a turn of their own, until `ran_apart` is asked."""
        self._owed = OwedEnds(registry, outbox, inbox, completion_ended, transaction=transaction)
        self._idle_owed = IdleOwedEnds(registry, self._owed, clock, busy=lambda session: session in self._workers,
                                       stopping=lambda: self._stopping)
        self._reading_back: asyncio.Task[None] | None = None
        """Starts workers again, backing off, for sessions whose messages held in the store it refused to read
        back (`_read_back_soon`)."""
        self._cut_short: set[GatewaySession] = set()
        """Sessions whose turn the shutdown interrupted (`RunningTurn.runs_again`): their agents' messages hold
        that turn half done, so no transcript of theirs is stored at the stop (`cancel`)."""
        self._journaling: dict[str, asyncio.Event] = {}
        """By turn id: the replies being journaled (`RunningTurn.replying`), set once they are, or refused."""
        self._stops: dict[str, asyncio.Event] = {}
        """By run id (`RunningTurn.run_id`): set when a stop ends that run (`ended_early`), which cancels what it
        does before its model runs (`_input`). The agent's interrupt reaches only a model call or a tool."""
        self._typing: dict[str, _Typing | None] = {}
        """By run id: the typing indicators of the turns running, which a stop that answers the chat ends."""
        self._stopped_typing: dict[str, asyncio.Future[None]] = {}
        """By turn id: the typing requests stopped turns left on the wire where typing lapses, being waited for
        (`_Typing.ending`): the stop's answer goes after them (`reply_journaled`), as a reply does."""
        self._idling: set[asyncio.Task[None]] = set()
        """The chats' indicators being cleared behind the turns' ends (`_idle_soon`): the stop waits for them
        (`idled`)."""

    def replaying(self, turn_ids: set[str]) -> None:
        """The turns of ``turn_ids`` may have run before (an event replayed after a restart or
        handed back, a delivery a stopped process left): each is a replay when it begins."""
        self._replays |= turn_ids

    def read_on_replay(self, turn_id: str, item: WorkItem) -> None:
        """``item``'s message was steered into the turn ``turn_id`` and read by an earlier run of it, whose answer the
        chat has (`gateway.owed_ends`): steered into its run again as it begins, settled with its end. Unsettled until
        then: a turn that never begins leaves it to the next start."""
        self._read_on_replay.setdefault(turn_id, []).append(item)

    def ran_apart(self, event: Inbound) -> bool:
        """Whether `submit` queued ``event`` under a turn of its own (`_own_turn`), not the one it was handed with:
        that turn does not begin with it, so a message of it replayed after it is no steer into it."""
        key = (event.platform, event.event_id)
        if key not in self._apart:
            return False
        self._apart.discard(key)
        return True

    async def reply_journaled(self, turn_id: str) -> None:
        """Return once the reply of ``turn_id``, if it is being journaled now (`RunningTurn.replying`: split in a
        worker thread first), is in the outbox, or refused by it, or its journaling cancelled. A ``/new`` waits for
        it before its own answer: journaled first, "Started a new session." went to the chat before the old session's
        answer, which read as the new session's. For a turn a stop ended, once a typing request it left on the wire
        is answered, or given up (`TYPING_FINISH_SECONDS`), where nothing clears the indicator: landing after the
        stop's answer, it showed "typing…" under "Stopped." for seconds."""
        journaled = self._journaling.get(turn_id)
        if journaled is not None:
            await journaled.wait()
        ending = self._stopped_typing.get(turn_id)
        if ending is not None:
            await asyncio.wait((ending,))  # not cancelled by this one's cancellation: the turn's end awaits it too

    def not_beginning(self, turn_id: str) -> None:
        """The turn of ``turn_id`` will not begin (its event was set aside): no replay to wait for."""
        self._forget_replay(turn_id)

    def _forget_replay(self, turn_id: str) -> bool:
        """Whether ``turn_id`` is a replay's, forgotten as one now (it begins, or never will)."""
        if turn_id not in self._replays:
            return False
        self._replays.discard(turn_id)
        return True

    def submit(self, session: GatewaySession, item: WorkItem) -> None:
        """Queue ``item``; it runs after everything queued before it. Not one of a platform that is not
        configured (taken out of the configuration since): nothing could answer it, so it is not run (nor
        its model paid), and what it answers stays as it is in the store for a start that configures it."""
        if session.platform not in self._adapters:
            self._forget_replay(item.turn_id)
            log.warning("%s is not configured: turn %s of chat %s is not run, and what it answers is kept until"
                        " it is configured again", session.platform, item.turn_id, session.chat_id)
            return
        item = self._own_turn(item)
        session = self._registry.enqueue(session, item)  # the chat's session in memory: it may have left it
        self.queue_changed(session)
        if session not in self._workers:
            self._workers[session] = asyncio.ensure_future(self._work(session))

    def _own_turn(self, item: WorkItem) -> WorkItem:
        """``item`` under a turn of its own when its message was read within another message's turn
        (`Inbox.read_into`: steered into it before it asked its question), which is not run again with it: its message
        set aside as a dead letter, or handed back apart from it. Under that turn's id, its answer was journaled as that
        turn's: that turn, run again once handed back, was taken for one whose answer the chat had and said nothing, or,
        run first, kept this one's answer from being journaled. Not where that turn's answer is in the chat, which
        answered this message too: it runs again quietly under that id. Only a replay's id can be another message's
        (`replaying`), so nothing is read for any other turn."""
        event = item.event
        if event is None or item.turn_id not in self._replays or reply_journaled(self._outbox, item.turn_id):
            return item
        try:
            opened_by = self._inbox.opened_by(event.platform, item.turn_id)
        except sqlite3.Error as exc:
            log.warning("could not read which event turn %s answers: %s: %s", item.turn_id, type(exc).__name__, exc)
            return item
        if opened_by is None or opened_by == event.event_id:
            return item
        own = dataclasses.replace(item, turn_id=new_turn_id())
        self._apart.add((event.platform, event.event_id))
        log.info("%s event %s was read within turn %s of event %s, which does not run with it: it runs as turn %s",
                 event.platform, event.event_id, item.turn_id, opened_by, own.turn_id)
        try:
            self._inbox.run_under(event.platform, event.event_id, own.turn_id)
        except sqlite3.Error as exc:  # a restart gives it a turn of its own again
            log.warning("could not record that %s event %s runs as turn %s: %s: %s", event.platform, event.event_id,
                        own.turn_id, type(exc).__name__, exc)
        return own

    def queue_changed(self, session: GatewaySession) -> None:
        """A message was queued in ``session``, or stopped waiting there without its turn beginning (its user deleted
        it): the running turn's progress card shows how many wait at once, not at its next refresh."""
        if (card := self._cards.get(session)) is not None:
            card.queue_changed()

    @property
    def busy(self) -> list[asyncio.Task[None]]:
        return list(self._workers.values())

    def stop_began(self) -> None:
        """The gateway's stop has begun (its adapters stop first): a turn's input an adapter cancels from now is
        the shutdown's doing (`_input`)."""
        self._stop_began = True

    def stop_taking(self) -> None:
        """Shutdown: no queued item starts from now on (their events stay unsettled, their
        delegations undelivered: the next start takes them up)."""
        self._stopping = True
        self._idle_owed.stop()  # `cancel` pays once more, after the turns
        if self._reading_back is not None:
            self._reading_back.cancel()  # what is held waits in the inbox, unsettled, for the next start

    async def cancel(self, within: float) -> None:
        """Cancel every session's worker and wait up to ``within`` seconds for them to end (a turn whose reply
        is being journaled journals it first, and ends: `RunningTurn.runs_again`). A turn
        whose tool or model call ignores its cancellation is named in the log and left behind: its
        event was never settled, so the next start handles its message again (`gateway.left_behind`).
        Then the turn ends the sessions without a turn still owe are paid, if the store takes them."""
        workers = {task: session for session, task in self._workers.items()}
        for task in await cancel_within(list(workers), within):
            session = workers[task]
            running = session.running
            log.error("the turn %s of %s chat %s did not end within %.0f s of its cancellation (%s ignores "
                      "cancellation): left behind, its message is handled again after the next start",
                      running.turn_id if running else "(none)", session.platform, session.chat_id, within,
                      f"tool {running.current_tool}" if running and running.current_tool else "a tool or model call")
        # Owed turn ends not paid by the stop would have their turns run again by the next start, tools, model
        # and children all over, though the store has room again (freed to restart on): paid now, if it takes
        # them. Not a session whose turn the shutdown cut short, nor one whose turn did not end (its worker left
        # behind, or cancelled midway): their agents' messages hold a turn half done.
        self._idle_owed.pay_at_stop(self._cut_short)

    async def idled(self, within: float) -> None:
        """Wait up to ``within`` seconds for the chats' indicators the turns' ends are clearing (`Adapter.idle`),
        then cancel those left: the stop's last step before the adapters' clients close. Left to run on, Slack's
        deletion of a placeholder still waiting for its turn or for Slack's answer met a closed client, and the
        placeholder stayed until the next start. They run beside the outbox's last flush, never ahead of it."""
        if self._idling:
            await asyncio.wait(set(self._idling), timeout=within)
            await cancel_within(set(self._idling), STUCK_WAIT_SECONDS)

    def ended_early(self, session: GatewaySession, why: str, stopped: RunningTurn | None,
                    waiting: list[tuple[str, Inbound]]) -> None:
        """A stop ended the ``stopped`` turn and the ``waiting`` messages (turn id, event) before
        they were answered: their events and the stopped delivery's delegation are settled at
        once, and a chat told of such a stop (a caller that follows turn ids; any chat for a
        stop it did not ask for) gets the stop's note now. The turn's own end repeats nothing:
        the note has the key it would use, and the first outcome of an event or a delegation stands.
        What the store refuses of this (a full disk) is logged, not raised: the stop holds all the same,
        and what it could not settle is handled again after the next start. A ``/new`` first pays the
        turn ends its session owes (`gateway.owed_ends`), with the transcript it is about to replace."""
        refused = Refusals()
        if why == "new" and (unpaid := self._owed.pay(session)) is not None:
            refused.note(owed_by(unpaid), unpaid.error)
        # turn id -> the kind of its reply and the message it answers, which its note quotes in a group
        notes: dict[str, tuple[str, str | None]] = {}
        if stopped is not None:
            if (stop := self._stops.get(stopped.run_id)) is not None:
                stop.set()
            # The chat is answered now (the command's confirmation, the stop's note): refreshed until the turn has
            # wound down (a tool may notice the stop late), "typing…" showed under that answer. Not for a turn a
            # follow-up superseded: the chat waits for that one's answer.
            if why != "superseded" and (typing := self._typing.get(stopped.run_id)) is not None:
                self._stop_typing(stopped.turn_id, typing)
            if not stopped.quiet:  # the chat saw that turn end (`RunningTurn.quiet`): no note of a stop under it
                notes[stopped.turn_id] = ("completion" if stopped.kind == "completion" else "reply", stopped.answers)
            if stopped.event is not None:
                with refused.noting("its message's settling"):
                    self._inbox.settle(stopped.event.platform, stopped.event.event_id)
            if stopped.delegation_id is not None:
                with refused.noting("its delegation's outcome"):
                    self._completion_ended(stopped.delegation_id, "suppressed", SUPPRESSED_REASONS[why])
            # Now, not when the turn winds down: after a crash in between nothing runs it again. Not a quiet run's
            # card the first run finalised: the chat saw that turn end, and "Stopped" stood above its answer.
            with refused.noting("its progress message", holds=False):
                if not (stopped.quiet and self._finished_before(session, stopped)):
                    how = outcome(None, why)
                    shown = self._progress.finish(session, stopped, self._display(session.platform), how, 0.0, 0)
                    # Not where a caller follows turn ids: the stop's note below says it.
                    if not shown and why == "superseded" and session.platform not in TRACKS_TURN_IDS and (
                            session.platform in SAYS_SUPERSEDED or self._progress.showed_messages(session, stopped)):
                        # What its progress message would have come to read. Not a notice: notices yield to every
                        # other part (`PROGRESS_KINDS`), and this one could follow the next message's answer.
                        self._send(session, final_text(how, 0.0), kind="command", key=f"{stopped.turn_id}:stopped",
                                   turn_id=stopped.turn_id)
        running = session.running
        for turn_id, event in waiting:
            self._forget_replay(turn_id)  # it never begins now
            if running is None or turn_id != running.turn_id:  # a steered message's is the running turn's
                notes.setdefault(turn_id, ("reply", quote_of(event)))
            with refused.noting("the waiting messages' settling"):
                self._inbox.settle(event.platform, event.event_id)
        if waiting and running is not None and running is not stopped and not running.suppressed:
            # A turn the stop left going on (a late /stop's, or one whose answer is being written): its card counts
            # them no more at once, not at its next refresh, as for a deletion (`queue_changed`).
            self.queue_changed(session)
        if session.platform in TRACKS_TURN_IDS or why in UNASKED_STOPS:
            for turn_id, (kind, quote) in notes.items():
                with refused.noting("its notes"):
                    self._send(session, SUPPRESSED_NOTES[why], kind=kind, key=f"{turn_id}:{kind}", turn_id=turn_id,
                               reply_to=quote)
        elif stopped is not None and stopped.stop_note is not None and stopped.turn_id in notes:
            # The stopper alone reads the command's answer.
            kind, quote = notes[stopped.turn_id]
            with refused.noting("its note"):
                self._send(session, stopped.stop_note, kind=kind, key=f"{stopped.turn_id}:{kind}",
                           turn_id=stopped.turn_id, reply_to=quote)
        refused.log(f"all that a stop ({SUPPRESSED_REASONS.get(why, why)}) ended", session,
                    "what of it is not settled is handled again after the next start")
        if session.owed:  # a /new refused them, maybe in a chat where no turn comes to pay them
            self._idle_owed.pay_soon()

    def _stop_typing(self, turn_id: str, typing: _Typing) -> None:
        """End a stopped turn's typing now (`ended_early`); a request on the wire is waited for where typing lapses,
        for the stop's answer to go after it (`reply_journaled`)."""
        if not typing.lapses:  # cleared after the turn anyway (Slack's placeholder, deleted by `idle`)
            typing.stop()
        elif (ending := typing.ending()) is not None:
            self._stopped_typing[turn_id] = ending
            ending.add_done_callback(lambda _: self._stopped_typing.pop(turn_id, None))

    def pay_owed(self) -> int:
        """The retention sweep's: pay the turn ends owed by the sessions no turn runs or waits in
        (`gateway.owed_ends`), as their next turn would, so that an idle chat's answer goes out once the
        store takes writes again, not when the chat next speaks. A session with a worker is left to it:
        it pays them before its next turn begins, or with the end of the one running (stored now, the
        transcript would hold that turn half done). Returns how many sessions the store still refused
        (one line says why). Between sweeps `IdleOwedEnds.pay_soon` tries them, backing off."""
        return self._idle_owed.pay_owed()

    async def _work(self, session: GatewaySession) -> None:
        try:
            # Before the next turn begins, whose transcript holds the owed turns; the turns after it begin right
            # after an end that paid them with its own, or tried to (`_run`).
            try:
                unpaid = self._owed.pay(session)
            except Exception:  # not the store's refusal: the turns queued run all the same
                log.exception("recording the turn ends %s chat %s owes failed", session.platform, session.chat_id)
                unpaid = None
            if unpaid is not None:
                Refusals.single(unpaid.what, unpaid.error).log(f"the end of turn {unpaid.turn_id}", session,
                                                               UNSETTLED)
            while not self._stopping and (taken := self._registry.begin(session)) is not None:
                item, running = taken
                running.replay = self._forget_replay(item.turn_id)
                for steered in self._read_on_replay.pop(item.turn_id, ()):
                    if steered.event is not None:
                        self._registry.steer(session, steered.event, steered.turn_id)
                await self._run(session, item, running)
        finally:
            self._workers.pop(session, None)
            if session.owed:
                self._idle_owed.pay_soon()
            if session.held and not self._stopping:  # the store refused to read them back (`SessionRegistry.begin`)
                self._read_back_soon()

    def _read_back_soon(self) -> None:
        """A worker ended with messages still held in the store, which refused to read them back: try again
        shortly, backing off as `IdleOwedEnds.pay_soon` does, rather than when the chat next speaks (maybe never,
        or only after a restart) though the disk has room again."""
        if self._reading_back is None:
            self._reading_back = asyncio.ensure_future(self._read_back_until_read())

    async def _read_back_until_read(self) -> None:
        delay = PAY_AGAIN_FIRST
        try:
            while not self._stopping:
                await self._clock.sleep(delay)
                left = [session for session in self._registry if session.held and session not in self._workers]
                if not left:
                    return  # a worker that leaves some held again calls again
                for session in left:  # each reads them back as its first turn begins, or ends and calls again
                    self._workers[session] = asyncio.ensure_future(self._work(session))
                delay = min(delay * 2, PAY_AGAIN_MAX)
        finally:
            self._reading_back = None

    async def _run(self, session: GatewaySession, item: WorkItem, running: RunningTurn) -> None:
        """Run ``item`` as one turn; never raises. A failure of its model or tools becomes one short
        message; one of the turn's own handling ends it all the same (`_broke`)."""
        under_way = _UnderWay(self._clock.monotonic())
        try:
            await self._turn(session, item, running, under_way)
        except Exception as exc:
            self._broke(session, item, running, under_way, exc)
        finally:
            # Past the reply, if any (`_turn` waited for typing before it): nothing follows for the request still
            # on the wire to go before, so it is cancelled, and awaited.
            if under_way.typing is not None:
                await under_way.typing.ended(wait=False)

    def _broke(self, session: GatewaySession, item: WorkItem, running: RunningTurn, under_way: _UnderWay,
               exc: Exception) -> None:
        """The turn's own handling raised what it does not expect (a bug meets an odd turn; not the store's
        refusal, which the turn notes and goes on without): it ends all the same, else its session would
        show it running for good and take no other turn. Its message counts as one whose handling failed
        (`gateway.dead_letters`): tried again after a pause and set aside after ``inbox.max_attempts``,
        rather than replayed, its model paid, at every start; a completion turn is tried again as often, then
        its results are sent as they are (`Ledger.completion_failed`). Either way what the turn delegated is
        dropped and its children stopped (`Ledger.abandon`): run again, it delegates anew. A turn that ended
        before (its end recorded or owed) and one the shutdown cut short (it runs again after the next start,
        which drops what it delegated) are only logged."""
        log.error("turn %s of %s chat %s failed in the gateway (%s: %s); the chat goes on", item.turn_id,
                  session.platform, session.chat_id, type(exc).__name__, exc, exc_info=exc)
        under_way.wind_down()
        self._cards.pop(session, None)
        self._finish_broken(session, running, under_way)
        if under_way.started and not under_way.reported:
            self._events.turn_ended(session, item, running, None, "failed", self._clock.monotonic() - under_way.at)
        if session.running is not running:
            return
        read = self._registry.end(session)  # steered messages it never read are the next turns
        # Those it read share its message's fate: left unsettled, they would go unanswered, with no apology,
        # until some later start replayed them.
        steered = [(i.turn_id, i.event) for i in running.steered if any(i.event is e for e in read)]
        if self._stopping or running.shutdown:
            if item.delegation_id is not None:
                log.warning("the results of delegation %s were not delivered: they are delivered after the next "
                            "start", item.delegation_id)
        elif item.event is not None or item.delegation_id is not None:
            try:  # before it can run again: settled at once, its children stopped later
                self._abandoned(session, item.turn_id)
            except Exception as drop_failed:  # the next start drops them, as that of a turn that runs again
                log.error("turn %s: dropping what it delegated failed (%s: %s)", item.turn_id,
                          type(drop_failed).__name__, drop_failed)
            for turn_id, event in ([(item.turn_id, item.event)] if item.event is not None else []) + steered:
                try:
                    self._failed(event, turn_id, exc)
                except Exception as count_failed:  # unsettled, it is handled again after the next start
                    log.error("turn %s: counting that it failed failed too (%s: %s); it is handled again after the "
                              "next start", turn_id, type(count_failed).__name__, count_failed)
            if item.event is None:
                try:
                    self._completion_failed(item.delegation_id, exc)  # type: ignore[arg-type]
                except Exception as count_failed:  # unsettled, it is handled again after the next start
                    log.error("turn %s: counting that it failed failed too (%s: %s); it is handled again after the "
                              "next start", item.turn_id, type(count_failed).__name__, count_failed)
        if _shows_typing(adapter := self._adapters.get(session.platform)):
            self._idle_soon(adapter, session)

    def _idle_soon(self, adapter: Adapter, session: GatewaySession) -> None:
        """Clear the chat's indicator behind the turn's end (`Adapter.idle`), which goes on without waiting for it."""
        task = asyncio.ensure_future(_idle(adapter, session))
        self._idling.add(task)
        task.add_done_callback(self._idling.discard)

    def _finish_broken(self, session: GatewaySession, running: RunningTurn, under_way: _UnderWay) -> None:
        """The progress message of a turn whose handling raised: it would read ⏳ for good, its turn over (the
        apology of a message set aside follows it). A run of the turn that finished it before (its end, a stop)
        keeps its word: the final edit is keyed by the run. Run again (its message tried again), the turn edits
        it anew."""
        progress = under_way.progress
        if progress is None or running.suppressed:  # a stop finished it
            return
        try:
            if progress.sent or self._progress.message(session, running).exists:
                self._progress.finish(session, running, self._display(session.platform), "failed",
                                      self._clock.monotonic() - under_way.at, progress.subagents)
        except Exception as exc:  # the message is decoration: what became of the turn is what matters
            log.warning("turn %s: finishing its progress message failed (%s: %s)", running.turn_id,
                        type(exc).__name__, exc)

    async def _turn(self, session: GatewaySession, item: WorkItem, running: RunningTurn, under_way: _UnderWay) -> None:
        display = self._display(session.platform)
        progress = under_way.progress = self._progress.progress_for(session, running, display)
        if isinstance(progress, ProgressCard):
            self._cards[session] = progress
        adapter = self._adapters.get(session.platform)
        started, started_at = self._clock.monotonic(), self._clock.time()
        # What of the turn the store refused (a full disk): the turn runs and ends all the same, for its chat
        # to go on; its messages are settled only with what answers them, else a restart runs it again.
        refused = Refusals()
        # Run again after a death while its end was owed (`gateway.owed_ends`), its answer journaled then: the
        # chat has that answer, which the outbox keeps under its
        # key. This run rebuilds what the death lost (its transcript, what it delegated) and shows nothing: its
        # words beside its tools, "typing…" or its card working again came after the answer. Its card is only
        # finalised (a death may have left it "⏳"). Its transcript holds that answer as the turn's reply, not what
        # this run's model wrote (`_reply_as_shown`). Known before anything awaits: a message sent from then on is
        # steered into the turn, or interrupts it, unless it is quiet (`gateway.app`).
        quiet = running.quiet = answered_before(self._outbox, running)
        if self._late_after and not quiet:  # a note would follow the answer
            with refused.noting("its late note", holds=False):
                self._note_waited(session, item)
        kind = "completion" if item.kind == "completion" else "reply"
        self._events.turn_started(session, item, running)
        under_way.started = True
        if not quiet:
            progress.start()
        result: TurnResult | None = None
        answered = False  # by the attachments' notes alone: nothing for the model
        pictures = 0  # its input's: one the provider cannot read is "one of" an album's
        picture_tokens = 0  # what the estimate counted for them: a message too long is told its text's length
        untold: EndMessage | None = None  # those notes, the store refused: the answer to owe
        crashed = False
        stop = self._stops[running.run_id] = asyncio.Event()
        shows_typing = _shows_typing(adapter) and not quiet
        typing = under_way.typing = _Typing(adapter, session, self._clock) if shows_typing else None
        self._typing[running.run_id] = typing
        try:
            with log_context(session_id=session.session_id, turn_id=item.turn_id):
                if item.event is not None:
                    await self._begin(item.event)
                elif item.delegation_id is not None:
                    await self._begin_delivery(item.delegation_id)
                content, untold = await self._input(session, item, running, stop, refused)
                answered, pictures, picture_tokens = content is None, pictures_in(content), pictures_tokens(content)
                # Not stopped (nor the gateway stopping) while its event was marked begun and its files downloaded.
                if content is not None and not running.suppressed and not running.shutdown:
                    interim = functools.partial(self._withheld if quiet else self._interim, refused, running)
                    observer = Observer(interim, session, running, display, progress)
                    agent = session.agent
                    version = agent.history_version
                    # A message's turn waits for its model's server down to come back, told so once; a results
                    # turn, whose work is in the conversation whatever it says, and a quiet run do not.
                    waits = self._model.wait_when_down_seconds if item.kind == "message" and not quiet else 0.0
                    with waiting_when_down(waits, self._clock,
                                           functools.partial(self._tell_waiting, session, item, running),
                                           functools.partial(self._hold, session, running, typing, progress)):
                        result = await agent.run_turn(content, observer=observer, turn_id=item.turn_id)
                    if quiet and (shown := answer_shown(self._outbox, session.platform, running)) is not None:
                        _reply_as_shown(agent, version, result, shown)
        except Exception:
            crashed = True
            log.exception("turn %s crashed", item.turn_id)
        finally:
            del self._stops[running.run_id]
            progress.disarm()  # before anything else is queued: no progress may follow the reply
            self._cards.pop(session, None)
            del self._typing[running.run_id]
            if typing is not None:
                typing.stop()
        ended = outcome(result, running.suppressed_by)
        if result is None and not crashed and ended == "failed":
            # No model ran, and nothing failed: its files' notes were the answer, or the shutdown came first. Told
            # failed, each file a user sent that could not be taken counted in alerts on failed turns, and its
            # trace read as a crash.
            ended = "shutdown" if running.shutdown else "done"
        self._events.turn_ended(session, item, running, result, ended, self._clock.monotonic() - started)
        under_way.reported = True
        # Queued before the reply, so the outbox sends it after, and nothing is left stale; with the
        # reply's parts, once they are split (a split can take a while: queued before it, the card
        # would go before any answer came). A stopped turn's was finished by the stop (`ended_early`).
        # A turn run again (a replay, its message tried again after its handling failed) finalises what an earlier
        # run showed too: a card a crash left reading "⏳" (or a stop "Interrupted", a failure "Failed"), which a
        # rerun ending before a card of its own was due would never touch.
        def finish_progress() -> None:
            with refused.noting("its progress message", holds=False):
                shown = progress.sent or self._progress.message(session, running).exists
                if shown and not running.suppressed and not (quiet and self._finished_before(session, running)):
                    self._progress.finish(session, running, display, ended, self._clock.monotonic() - started,
                                          progress.subagents, progress.endings())

        text = None
        if not running.suppressed and not answered and not running.shutdown:
            with log_context(session_id=session.session_id, turn_id=item.turn_id):  # a failed model call's line
                reply = _down_reply(item.kind, result) or reply_text(item.kind, result,
                                                                    spoke=running.said + running.files > 0,
                                                                    pictures=pictures, picture_tokens=picture_tokens)
            text = "\n\n".join(t for t in (reply, "\n".join(item.notes)) if t) or None
        if text is None:
            finish_progress()
        if running.runs_again:  # it runs again after the restart: say nothing now
            self._registry.end(session)  # stores nothing
            self._cut_short.add(session)
            refused.log_turn(item.turn_id, session)
            return
        # The answers the ends of earlier turns owe go before this turn's, if the store takes them now. If not,
        # this one goes all the same if it can (a short answer may fit where a long one did not), rather than
        # wait for the chat's next turn; its end is then owed behind theirs.
        if (behind := self._owed.send(session)) is not None:
            refused.note(owed_by(behind), behind.error)
        message: EndMessage | None = None  # until journaled
        cut = False  # the shutdown cancelled the worker as the reply was journaled: raised once the turn has ended
        typing_left: _Typing | None = None  # the typing indicator to end once the turn's end is written
        if text is not None and quiet:
            finish_progress()  # the chat has the turn's answer (`answer_shown`): this run's words never go out
        elif text is not None:
            if self._late_after and self._slept(started, started_at) >= self._late_after:
                with refused.noting("its late note", holds=False):
                    self._note_waited(session, item)  # unless it went at the start: its key is the turn's
            running.replying = True  # a stop from now on comes after the reply (`SessionRegistry.stop_turn`)
            answer = EndMessage(text, kind, f"{item.turn_id}:{kind}", item.turn_id, reply_to=None)
            journaled = self._journaling[item.turn_id] = asyncio.Event()
            try:
                # Past `replying`: a stop meanwhile waits for this reply (`reply_journaled`), rather than drop it.
                splitting = False
                try:
                    # Only where nothing clears the indicator after the reply (`Adapter.typing_interval`): Slack's
                    # placeholder, deleted by `idle`, was posted for nothing, and one the process died sending stayed.
                    if typing is not None and typing.lapses:
                        await typing.ended()
                    splitting = True
                    message = await self._reply(session, running, answer, finish_progress, refused)
                except asyncio.CancelledError:
                    # The shutdown's: the reply is journaled all the same, and the turn ends as it would have without
                    # it (`runs_again`). Cut short, its message ran again after the restart: after a /new that had
                    # waited for this reply, in the new session, which then held the old one's request and sent its
                    # answer under the /new's. A split under way was finished, not begun again (`_reply`): split anew,
                    # a long reply outlasted the stop's wait, which named the turn as one ignoring its cancellation.
                    cut = True
                    if not splitting:
                        if typing is not None:
                            await typing.ended(wait=False)  # the process stops: no typing request is waited for
                        message = await self._reply(session, running, answer, finish_progress, refused)
                    elif not self._outbox.journaled(f"{answer.key}:0"):
                        if typing is not None:
                            await typing.ended(wait=False)
                        raise  # cancelled twice: given up, its message is handled again after the next start
                    else:
                        # Ended after the turn's end is written: a wait now would let the loop commit the reply
                        # without it, and a crash then ran its message again.
                        typing_left = typing
            finally:
                del self._journaling[item.turn_id]
                journaled.set()
        elif untold is not None:
            message = untold  # owed as a reply is (`_input`)
        elif not quiet and (note := _stop_note(session.platform, running, answered)) is not None:
            message = EndMessage(note, kind, f"{item.turn_id}:{kind}", item.turn_id, running.answers, note=True)
            with refused.noting("its note"):
                self._send(session, message.text, kind=kind, key=message.key, turn_id=item.turn_id,
                           reply_to=message.reply_to)
                message = None
        elif not quiet and _said_it_all(result, running):
            # Marked where its reply would be journaled, owed as a reply is: run again after a death while its end
            # is owed, the turn then shows nothing more (`answered_before`), the chat having read it end.
            message = EndMessage("", kind, f"{item.turn_id}:{kind}", item.turn_id, None, sends=True)
            with refused.noting("the mark that its messages were its answer"):
                self._outbox.mark_answered_by_sends(message.key)
                message = None
        # The turn is over, in memory, whatever the store says; the rest of its end is recorded after the ends
        # owed before it, in this same commit: its delegation's outcome with its reply (delivered exactly once),
        # then the transcript, then its messages' settling. Refused, it is owed, and the chat goes on.
        read = self._registry.end(session)
        self._owed.owe(session, OwedEnd(item.turn_id, message, self._delivery(item, running, text),
                                        (*read, *([item.event] if item.event is not None else []))))
        if not refused.holds and (unpaid := self._owed.pay(session)) is not None:
            refused.note(unpaid.what if unpaid.turn_id == item.turn_id else owed_by(unpaid), unpaid.error)
        refused.log_turn(item.turn_id, session)
        if typing_left is not None:
            await typing_left.ended(wait=False)
        if _shows_typing(adapter):
            self._idle_soon(adapter, session)
        if cut:
            raise asyncio.CancelledError

    async def _reply(self, session: GatewaySession, running: RunningTurn, reply: EndMessage,
                     first: Callable[[], None], refused: Refusals) -> EndMessage | None:
        """Journal the turn's ``reply``, calling ``first`` right before (`Outbox.enqueue_long`). None once
        journaled; refused, the reply to owe, with the quote it took. Cancelled while it is split, it journals
        the reply first, then raises the cancellation."""
        taken: list[str | None] = []

        def quote() -> str | None:
            taken.append(running.take_quote())
            return taken[-1]

        with refused.noting("its reply"):
            await self._outbox.enqueue_long(*session.chat, reply.text, kind=reply.kind, key=reply.key,
                                            turn_id=reply.turn_id, first=first, reply_to=quote,
                                            journal_if_cancelled=True)
            return None
        return dataclasses.replace(reply, reply_to=taken[-1] if taken else running.take_quote())

    @staticmethod
    def _delivery(item: WorkItem, running: RunningTurn, text: str | None) -> tuple[str, str, str | None] | None:
        """A completion turn's outcome for its delegation (`CompletionEnded`); None for a message's turn."""
        if item.delegation_id is None:
            return None
        if running.suppressed:
            return item.delegation_id, "suppressed", SUPPRESSED_REASONS[running.suppressed_by]
        if text is None:
            return item.delegation_id, "suppressed", SILENCE
        return item.delegation_id, "delivered", None

    async def _begin(self, event: Inbound) -> None:
        """Mark ``event`` begun, durably, before anything of its turn runs (its files are fetched
        first): a death from here on counts as a failed attempt of this event."""
        try:
            self._inbox.begin(event.platform, event.event_id)
            await self._durable()
        except sqlite3.Error as exc:  # a full disk: answered all the same, though a death now would go uncharged
            log.warning("could not record that the turn of %s event %s began: %s: %s", event.platform,
                        event.event_id, type(exc).__name__, exc)

    async def _begin_delivery(self, delegation_id: str) -> None:
        """Mark the completion turn of ``delegation_id`` begun, durably, as `_begin` marks a message's."""
        try:
            self._completion_begun(delegation_id)
            await self._durable()
        except sqlite3.Error as exc:
            log.warning("could not record that the completion turn of delegation %s began: %s: %s", delegation_id,
                        type(exc).__name__, exc)

    def _slept(self, started: float, started_at: float) -> float:
        """Seconds the machine was suspended (or the wall clock stepped forward) since a turn began at
        monotonic ``started``, wall ``started_at``: the monotonic clock stops in a suspend. A turn
        that spanned a night's suspend answers a message hours old, which its reply's note says;
        one that merely ran long told the chat so as it went (notices, the progress card)."""
        return (self._clock.time() - started_at) - (self._clock.monotonic() - started)

    def _note_waited(self, session: GatewaySession, item: WorkItem) -> None:
        """Open the turn of a message that waited `_late_after` or more for it (the gateway was
        down, or the message was set aside and handed back), or precede the reply of a turn the
        machine slept through as long, with a note of its age (`gateway.late_notes`); once per
        turn, also when it runs again after a restart, but not once its answer was journaled (nor in a quiet run,
        `RunningTurn.quiet`). In a group it quotes the message, as the answer after it does: the note leaves the
        answer its own quote (`RunningTurn.take_quote`)."""
        event = item.event
        if event is None or session.platform in late_notes.WITHOUT_NOTES:
            return
        received = self._inbox.received_at(event.platform, event.event_id)
        if received is None:
            return
        if event.sent_at is not None and event.sent_at < received:
            received = event.sent_at  # the platform held it (a Telegram backlog read after a restart)
        waited = self._clock.time() - received
        # Not once answered before a restart ran it again (its end unrecorded): a note would follow the answer.
        if waited >= self._late_after and not reply_journaled(self._outbox, item.turn_id):
            self._send(session, late_notes.picked_up_text(waited, event.text), kind="reply",
                       key=f"{item.turn_id}{late_notes.PICKED_UP}", turn_id=item.turn_id, reply_to=quote_of(event))

    async def _input(self, session: GatewaySession, item: WorkItem, running: RunningTurn, stop: asyncio.Event,
                     refused: Refusals) -> tuple[str | list[dict[str, Any]] | None, EndMessage | None]:
        """The turn's input for its model; None when there is nothing for it: the attachments' notes were the
        answer, or a stop (``stop``) ended the turn first. Fetching its files (downloads, tries again, a voice
        note's transcription) can take minutes: a stop cancels it at once (`prepare` stores no file by halves).
        With it, the notes the store refused (a full disk, another process's write lock) where they are the answer:
        the turn's end owes them as it owes a reply. Beside an answer of the model's they are left out (noted in
        ``refused``), their quote left to that answer: raised, the refusal crashed the turn, whose chat got an
        apology in place of its answer."""
        if item.event is None or not item.event.attachments:
            # Most turns: no files, so no folder, model or adapter to look at.
            return (senders.for_model(item.text, item.event) if item.kind == "message" else item.text), None
        if stop.is_set():  # stopped while its event was marked begun
            return None, None
        untold: list[tuple[EndMessage, sqlite3.Error]] = []

        def tell(text: str) -> None:
            if not running.suppressed:  # stopped while its files downloaded: the stop said the last word
                note = EndMessage(text, "reply", f"{item.turn_id}:attachments", item.turn_id, running.take_quote())
                try:
                    self._send(session, note.text, kind=note.kind, key=note.key, turn_id=note.turn_id,
                               reply_to=note.reply_to)
                except sqlite3.Error as exc:
                    untold.append((note, exc))

        agent = session.agent
        # Who sent it is said of what the files make of the message: the text alone would never be
        # empty, and a message none of whose files could be taken (its notes the answer) would run a turn.
        try:
            content = await _unless_stopped(stop, turn_input(
                item.text, item.event, self._adapters.get(session.platform), workspace=agent.workspace,
                folder=chat_folder(session.platform, session.chat_id), model=self._model, tell=tell, clock=self._clock,
                events=self._events,
                supports_vision=bool(getattr(agent.model, "supports_vision", False))))
        except _InputCancelled:
            if not (self._stop_began or running.shutdown):
                raise
            # An adapter that stops cancels its own downloads: the shutdown's doing, not a failure. Cut short as the
            # shutdown cuts a turn (`SessionRegistry.interrupt_all`), it runs again after the next start; told
            # failed, its chat got an apology, and its message was settled, never answered.
            running.shutdown = True
            return None, None
        if untold:
            note, exc = untold[0]  # `turn_input` tells once
            owed = content is None and not running.suppressed
            refused.note("the note about its files", exc, holds=owed)
            if owed:
                return None, note
            running.give_back_quote(note.reply_to)
        return (None if content is None else senders.content_for_model(content, item.event)), None

    def _tell_waiting(self, session: GatewaySession, item: WorkItem, running: RunningTurn, seconds: float) -> None:
        """Tell the chat, once per turn (its key is the turn's), that its message waits up to ``seconds``, what its
        wait has left, for the model's server known to be down (`agent.models._outage.WaitWhenDown`). Refused by the
        store, it is left out: the turn waits all the same."""
        if running.suppressed:
            return
        try:
            # It quotes the message, and leaves the quote to the answer (`RunningTurn.take_quote`): coming minutes
            # later, among a group's other messages, the answer shows whose it is too.
            self._send(session, down_waiting_text(seconds), kind="interim", key=f"{item.turn_id}:model-down",
                       turn_id=item.turn_id, reply_to=running.quote)
        except sqlite3.Error as exc:
            log.warning("turn %s: telling its chat that it waits for the model failed: %s: %s", item.turn_id,
                        type(exc).__name__, exc)

    def _hold(self, session: GatewaySession, running: RunningTurn, typing: _Typing | None,
              progress: Notifier | ProgressCard, held: bool) -> None:
        """Pause (``held``) or resume the turn's typing and progress notices while it waits for its model to come
        back (`agent.models._outage.WaitWhenDown`), its chat told so: "typing…" for ten minutes, and "⏳ Still
        working", said it writes; a card says it waits (`ProgressCard.hold`). Never raises: the model call that calls
        it goes on whatever."""
        try:
            if typing is not None and typing.hold(held) and (adapter := self._adapters.get(session.platform)):
                self._idle_soon(adapter, session)
            if not running.suppressed:  # a stop finished its progress message
                progress.hold(held)
        except Exception as exc:  # decoration: the wait is what matters
            log.warning("turn %s: %s its typing and progress failed (%s: %s)", running.turn_id,
                        "pausing" if held else "resuming", type(exc).__name__, exc)

    def _finished_before(self, session: GatewaySession, running: RunningTurn) -> bool:
        """Whether an earlier run of the turn finalised its progress message (`ProgressMessage.finish` keys that
        ``<message key>-final-<run>``): a run that answered did so with its answer, and a quiet run again (``quiet``
        in `_turn`) finalising it anew turned its line to this run's outcome, "Failed" above that answer."""
        final = f"{running.turn_id}:notice-final-"
        return any(m["key"].startswith(final) for m in self._outbox.turn_messages(session.platform, running.turn_id))

    def _send(self, session: GatewaySession, text: str, **kw: Any) -> None:
        self._outbox.enqueue(*session.chat, text, **kw)

    @staticmethod
    async def _withheld(refused: Refusals, running: RunningTurn, session: GatewaySession, text: str,
                        **kw: Any) -> None:
        """`_interim` of a run whose answer the chat has (``quiet`` in `_turn`): nothing is sent, and no quote
        taken."""

    async def _interim(self, refused: Refusals, running: RunningTurn, session: GatewaySession, text: str,
                       **kw: Any) -> None:
        """Journal the model's text beside its tool calls, split in a worker thread (`Outbox.enqueue_long`: 1 MB
        heavy with formatting held every chat 0.3-0.7 s on the loop); the turn goes on once it is journaled, so
        it keeps its place before the turn's later messages and reply. Not journaled once the turn was stopped
        meanwhile: it would follow the stop's note. Refused (a full disk, another process's write lock), it is left
        out, and the message it quoted goes to the reply: raised, it crashed the turn, whose chat got an apology in
        place of its answer."""
        taken: list[str | None] = []

        def quote() -> str | None:  # taken as its first part is journaled
            taken.append(running.take_quote())
            return taken[-1]

        def unless_stopped() -> None:
            if running.suppressed:
                raise _StoppedMeanwhile

        with refused.noting("an interim message", holds=False):
            with contextlib.suppress(_StoppedMeanwhile):
                await self._outbox.enqueue_long(*session.chat, text, first=unless_stopped, reply_to=quote, **kw)
            return
        if taken:
            running.give_back_quote(taken[0])


def _down_reply(kind: str, result: TurnResult | None) -> str | None:
    """`MODEL_DOWN` for a turn of ``kind`` that ended with ``result``, a model call not sent to a server known to be
    down, after any partial answer; None for any other turn (`reply_text` says what then). Its failure is not logged
    per turn: the outage is, as it begins and as it ends. A completion turn's has its own text
    (`gateway.replies.RESULTS_UNREPORTED_DOWN`): nobody wrote a message to send again; one held for a server's 429
    says to try again once the wait it asked for is over (`gateway.replies.MODEL_BUSY`)."""
    if (kind == "completion" or result is None or result.exit_reason != "error" or result.error_kind == "rate_limited"
            or not server_down(result.error or "")):
        return None
    text = f"{result.text}\n\n({MODEL_DOWN})" if result.text else MODEL_DOWN
    return f"{text}\n\n{SUMMARY_FAILED}" if result.summary_failed else text


def _said_it_all(result: TurnResult | None, running: RunningTurn) -> bool:
    """Whether a turn that ends with no answer to send (`reply_text` gave none) ended so because what it sent with
    ``send_message`` or ``send_file`` said it all: its model completed, and the turn was not cut short."""
    return (result is not None and result.exit_reason == "completed" and running.said + running.files > 0
            and not running.suppressed and not running.shutdown)


def _stop_note(platform: str, running: RunningTurn, answered: bool) -> str | None:
    """The note a turn that ends with nothing to say leaves (with the key of the one its stop sent, `ended_early`):
    why it was cut short, for a caller that follows turn ids and for a stop its chat did not ask for; in a group,
    for the stop of another member than its asker."""
    if (running.suppressed or answered) and (platform in TRACKS_TURN_IDS or running.suppressed_by in UNASKED_STOPS):
        return SUPPRESSED_NOTES[running.suppressed_by or "stop"]
    return running.stop_note


class _UnderWay:
    """What of a turn is under way, for `TurnRunner._broke` to wind down when its handling raises."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.progress: Notifier | ProgressCard | None = None
        self.typing: _Typing | None = None
        self.started = False
        """Told as begun (`GatewayEvents.turn_started`)."""
        self.reported = False
        """Told as ended (`GatewayEvents.turn_ended`)."""

    def wind_down(self) -> None:
        if self.progress is not None:
            self.progress.disarm()


class _StoppedMeanwhile(Exception):
    """Raised from `Outbox.enqueue_long`'s ``first``: the turn was stopped while its interim text was split."""


class _InputCancelled(RuntimeError):
    """The turn's input (its files' fetching) raised a CancelledError of its own, the turn not stopped."""


async def _unless_stopped(stop: asyncio.Event, work: Awaitable[T]) -> T | None:
    """What ``work`` gives, or None once ``stop`` is set before it ends: it is cancelled then, and waited for
    (as it is when this is cancelled: the shutdown), so nothing of it goes on behind the turn's end. A CancelledError
    of its own (something it awaited, cancelled by another) is a failure, raised as `_InputCancelled`."""
    doing, stopping = asyncio.ensure_future(work), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((doing, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        doing.cancel()  # nothing, once it ended
        await asyncio.wait((doing,))
    if doing.cancelled() and not stop.is_set():
        # Taken for a stop's, the turn ended with no answer for its chat, and counted done.
        raise _InputCancelled("the turn's input was cancelled, though the turn was not stopped")
    return None if doing.cancelled() else doing.result()


def _reply_as_shown(agent: AgentSession, version: int, result: TurnResult, shown: str) -> None:
    """Make ``shown``, the answer the chat has (`answer_shown`), the reply of the quiet run that ended with ``result``
    in its agent's conversation, which the transcript stores and the next turns' model reads: in place of its final
    answer's words, or after its last message where it ended without one (a failed model call, a stop). Its tool
    calls and their results stay: what they did (a delegation) was done again. ``version``: the conversation's
    `history_version` as the run began; one that changed since without a final answer may have taken the run's
    message out (a content filter's refusal), and an answer after it would answer nothing there: none is added."""
    messages = agent.messages
    last = messages[-1] if messages else {}
    if result.exit_reason == "completed" and last.get("role") == "assistant" and not last.get("tool_calls"):
        messages[-1] = {**last, "content": shown}
    elif agent.history_version == version:
        messages.append({"role": "assistant", "content": shown})


def _shows_typing(adapter: Adapter | None) -> bool:
    return adapter is not None and adapter.typing_interval > 0


class _Typing:
    """A turn's typing indicator (`Adapter.typing`), refreshed a little sooner than it lapses until `stop`."""

    def __init__(self, adapter: Adapter, session: GatewaySession, clock: Clock) -> None:
        self._adapter, self._session, self._clock = adapter, session, clock
        self.lapses: bool = getattr(adapter, "typing_lapses", False)
        """Nothing clears the indicator (`Adapter.typing_interval`): what the chat reads waits for a request on
        the wire."""
        self._sending = False
        self._stopped = False
        self._held = False
        self._again = False
        self._task = asyncio.ensure_future(self._keep_typing())
        self._ending: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """No typing request starts from now on; one on the wire is left to be answered (`ended`)."""
        self._stopped = True
        if not self._sending:
            self._task.cancel()

    def hold(self, held: bool) -> bool:
        """No typing request starts while ``held``; one on the wire is left to be answered. Released, the next
        goes at once (one that lapses meanwhile is gone), or as soon as the one on the wire is answered. True when an
        indicator that does not lapse is to be cleared (`lapses`: Slack's placeholder would read "working" all
        along)."""
        if self._stopped or held == self._held:
            return False
        self._held = held
        # Released with one still on the wire: the next goes once it is answered (`idle` cleared what it showed).
        self._again = self._sending and not held
        if not self._sending:
            self._task.cancel()
            if not held:
                self._task = asyncio.ensure_future(self._keep_typing())
        return held and not self.lapses

    def ending(self) -> asyncio.Task[None] | None:
        """`stop`, and `ended` (waiting) in a task of its own, begun once, while a request is on the wire (else
        None): a stop's answer waits for it, and `ended` awaits it rather than cut that wait short."""
        self.stop()
        if self._ending is None and self._sending:
            self._ending = asyncio.ensure_future(self._end(wait=True))
        return self._ending

    async def ended(self, *, wait: bool = True) -> None:
        """`stop`, give the request on the wire (if any) up to `TYPING_FINISH_SECONDS` on the clock to be
        answered (not at all unless ``wait``; once `ending` began, that wait whatever ``wait``), then cancel it;
        return once it ended, or after `STUCK_WAIT_SECONDS` of an adapter that ignores its cancellation. Raises
        nothing but a cancellation."""
        self.stop()
        if self._ending is None:
            await self._end(wait)
            return
        try:
            await asyncio.wait((self._ending,))
        except asyncio.CancelledError:  # the shutdown: what is on the wire is cancelled, as at any turn's end
            self._ending.cancel()
            raise

    async def _end(self, wait: bool) -> None:
        if wait and not self._sending:
            # Nothing on the wire: the reply is queued at once, before anything else this turn of the loop queues
            # (the delegation's card goes after its acknowledgement). `_run` awaits the cancelled task after.
            return
        timer = asyncio.ensure_future(self._clock.sleep(TYPING_FINISH_SECONDS)) if wait else None
        try:
            if timer is not None:
                await asyncio.wait((self._task, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the shutdown cancels the wait
            if timer is not None:
                timer.cancel()
            await cancel_within((self._task,), STUCK_WAIT_SECONDS)

    async def _keep_typing(self) -> None:
        adapter, session = self._adapter, self._session
        interval = max(0.5, adapter.typing_interval * 0.8)
        while True:
            self._sending = True
            try:
                await adapter.typing(session.chat_id, session.thread_id)
            except Exception as exc:  # typing is decoration: never let it end a turn
                log.debug("typing on %s failed: %s", session.platform, exc)
            finally:
                self._sending = False
            if self._stopped or self._held:
                return
            if self._again:  # released while it was on the wire (`hold`)
                self._again = False
                continue
            await asyncio.sleep(interval)


async def _idle(adapter: Adapter, session: GatewaySession) -> None:
    try:
        await adapter.idle(session.chat_id, session.thread_id)
    except Exception as exc:
        log.debug("idle on %s failed: %s", adapter.name, exc)
