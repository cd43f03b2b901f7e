"""A user's edit of their message that still waits for its turn: the turn answers the message as edited.

An adapter that hears edits (`platforms.base.HearsEdits`) hands each over as `MessageEdits.edited`, in the
order of its chat's events (`gateway.chat_intake`), so an edit handed over right after its message finds it
queued. What runs is the session's queued `WorkItem`, and what a restart replays is the inbox's record: both
are changed, or neither. Everything else is left as it is, and the edit starts nothing: a message whose turn
has begun (running, steered into a running turn, held as the answer to a question) or has been answered, one
the gateway never took or has forgotten, an album (its caption may be several items' joined), the text after a
``/new`` (its command has run), one held in the store behind a hundred others (`session_registry.QUEUED`), and
an edit that makes it a command (commands are routed as they arrive; replayed after a restart, it would be
routed as one, not answered as the message it ran as).

A start replays what waited for its turn when the last process ended, and queues it only after the platforms
have started (an adapter that cannot start runs no turn): an edit made while the gateway was down may come
first. Told of those events (`replaying`), it is kept for the event (`replayed`) as for one queued already. So is
one of a message taken once the stop had begun (`taken_in_stop`), recorded for the next start in no queue. A
newer message of such a chat that a platform started first hands over meanwhile waits behind them, recorded, in
no queue yet (`gateway.chat_intake.Replays`): its edit changes it there at once, so the platform, which may hand
events over one at a time, goes on with every chat's events while the replay waits. A start that fails or is
stopped before the replay leaves it there for the next start: edited until the process ends, its record in the
inbox is, so the next start answers it as edited.

A deletion (`platforms.base.HearsDeletions`, `MessageEdits.deleted`) drops a message that waits for its turn (the
user took back what they sent, perhaps a pasted secret): in its session's queue (the text after a ``/new`` too), held
in the store behind a hundred others, waiting behind a start's replay, replayed by this start and not queued again
yet, or taken once the stop had begun, for the next start. Its turn is taken out of where it waits and its event
settled in the inbox without its text, in one step, so it is neither answered nor replayed, the running turn's progress
card counts it no more, and the chat is told nothing. Everything else is left as it is, as for an edit: a message whose
turn has begun (its model may have read it), also one a start replays whose turn had asked the chat a question or
answered it, or that was steered into such a turn and read there, wherever it waits; an album, and a command waiting
behind a replay or replayed (routed as it is handed on).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable

from gateway.chat_intake import ChatIntake, Replays
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession, WorkItem
from gateway.store import session_key
from gateway.store.inbox import Inbox
from platforms.base import Inbound

log = logging.getLogger("gateway.edits")


class MessageEdits:
    """``is_command(text)``: whether the gateway would route ``text`` as a command; ``durable()``: commit what
    was written, raising as `gateway.app.Gateway.handle` does when the store refuses; ``accepting()``: whether
    the gateway takes events now (a stop has begun: what waits in a session's queue, or to be replayed by this
    start, is replayed after the next start, unedited; what waits behind a replay, or was taken since, is changed
    all the same)."""

    def __init__(self, sessions: SessionRegistry, inbox: Inbox, intake: ChatIntake, behind_replay: Replays, *,
                 is_command: Callable[[str], bool], durable: Callable[[], Awaitable[None]],
                 before_waiting: Callable[[], Awaitable[None]], accepting: Callable[[], bool],
                 not_beginning: Callable[[str], None], queue_changed: Callable[[GatewaySession], None]) -> None:
        """``queue_changed(session)``: a message stopped waiting in ``session`` without its turn beginning."""
        self._sessions, self._inbox, self._intake, self._behind_replay = sessions, inbox, intake, behind_replay
        self._is_command, self._durable, self._before_waiting = is_command, durable, before_waiting
        self._accepting, self._not_beginning, self._queue_changed = accepting, not_beginning, queue_changed
        self._replays: dict[tuple[str, str], Inbound | None] = {}
        """By (platform, event id): the events a start replays that wait to be queued again; None for one its user
        deleted meanwhile."""
        self._too_late: set[tuple[str, str]] = set()
        """By (platform, event id): the events a start replays whose turns had asked the chat a question or answered
        it: neither dropped nor changed, also once queued again (behind a completion turn that runs first)."""
        self._taken_in_stop: dict[tuple[str, str], Inbound] = {}
        """By (platform, event id): the events taken once the stop had begun, recorded for the next start in no
        queue (`taken_in_stop`)."""

    def replaying(self, events: Iterable[Inbound], too_late: Iterable[Inbound] = ()) -> None:
        """At start, before any platform does: the replayed events whose turns had not begun. Not one that had
        (run again after a clean stop), also unmarked since (`Inbox.reopen`: its question waits for the chat's
        answer), nor one handed back (`switchboard inbox retry`): it may have run. ``too_late``: those whose turns
        had asked the chat a question or answered it (`gateway.owed_ends`), the messages steered into them and read
        (`Inbox.read_into`) too: deleted, the question was left waiting with no turn to take its answer."""
        self._replays = {(event.platform, event.event_id): event for event in events}
        self._too_late = {(event.platform, event.event_id) for event in too_late}

    def handed_back(self, event: Inbound) -> None:
        """``event`` is handled again (tried again after a failure, or its dead letter handed back) while the gateway
        runs, and its turn, which runs again, had asked the chat a question or answered it: too late to drop or
        change, as it is when a start replays it (`replaying`)."""
        self._too_late.add((event.platform, event.event_id))

    def taken_in_stop(self, event: Inbound) -> None:
        """The stop has begun and ``event``, handed over meanwhile, is recorded for the next start, in no queue: its
        edit or deletion heard before the adapter stops changes or drops it there (the platform, told it was taken,
        sends it no more), as one of a message in its session's queue does."""
        self._taken_in_stop[(event.platform, event.event_id)] = event

    def replayed(self, event: Inbound) -> Inbound | None:
        """``event`` as its user edited it meanwhile, about to be queued again: from now on an edit finds it
        in its session's queue. Called with no await before it is handed to its chat's intake, so an edit
        handed over meanwhile waits behind it. None if its user deleted it meanwhile: settled, never to be queued."""
        return self._replays.pop((event.platform, event.event_id), event)

    async def edited(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        """`platforms.base.MessageEdited`. Idempotent: the same edit handed over again changes nothing more."""
        key = session_key(platform, chat_id, thread_id)
        # Also once a stop has begun: what waits behind a replay the start gave up on is replayed by the next start
        # from the inbox, which the edit changes, as it does a message's record before a failed start.
        behind = self._behind_replay.waiting(key, message_id)
        if behind is not None:
            # Neither queued nor in its chat's intake yet, so changed now, with no await before: waiting for the
            # chat until the replay is through held the platform's hand-over of every chat's events meanwhile.
            if behind.route is not None or behind.event.aliases:
                return self._left(platform, chat_id, message_id)
            if (edited := self._edit(behind.event, text)) is None:
                return False
            behind.event = edited
        else:
            async with self._intake.turn(key, self._before_waiting):
                accepting = self._accepting()
                item = self._waiting(platform, chat_id, thread_id, message_id) if accepting else None
                event = item.event if item is not None else None
                if event is None:
                    event = self._replay(platform, chat_id, thread_id, message_id) if accepting \
                        else self._taken(platform, chat_id, thread_id, message_id)
                if event is None:
                    return self._left(platform, chat_id, message_id)
                if (edited := self._edit(event, text)) is None:
                    return False
                if item is not None:
                    item.text, item.event = text, edited
                elif accepting:
                    self._replays[(platform, edited.event_id)] = edited
                else:
                    self._taken_in_stop[(platform, edited.event_id)] = edited
        await self._durable()
        return True

    async def deleted(self, platform: str, chat_id: str, thread_id: str | None, message_id: str) -> bool:
        """`platforms.base.MessageDeleted`. Idempotent: the same deletion handed over again drops nothing more.
        Also once a stop has begun (the adapter still hands events over): left waiting, the next start replayed the
        message from the inbox and answered it, and Slack, which had the deletion acked, sends it no more."""
        key = session_key(platform, chat_id, thread_id)
        behind = self._behind_replay.waiting(key, message_id)
        if behind is not None:
            # Dropped now, with no await before, as an edit changes it there (`edited`).
            if behind.route is not None or behind.event.aliases or not self._inbox.withdraw(behind.event):
                return self._kept(platform, chat_id, message_id)
            self._behind_replay.drop(key, behind)
            event = behind.event
        else:
            async with self._intake.turn(key, self._before_waiting):
                dropped = self._drop(platform, chat_id, thread_id, message_id)
            if dropped is None:
                return self._kept(platform, chat_id, message_id)
            event = dropped
        log.info("%s chat %s: message %s (event %s) was deleted while it waited for its turn; it is not answered",
                 platform, chat_id, message_id, event.event_id)
        await self._durable()
        return True

    def _drop(self, platform: str, chat_id: str, thread_id: str | None, message_id: str) -> Inbound | None:
        """Take the message out of where it waits for its turn, with no await, its event withdrawn from the inbox:
        its session's queue, the store behind it, or this start's replay; returns its event, or None if it waits
        in none of them."""
        found = self._queued(platform, chat_id, thread_id, message_id)
        if found is not None:
            session, item = found
            if item.event is None or not self._inbox.withdraw(item.event):
                return None
            # With no await since it was found: no worker took it meanwhile.
            session.queue.remove(item)
            self._not_beginning(item.turn_id)
            self._queue_changed(session)
            return item.event
        session = self._sessions.find(platform, chat_id, thread_id)
        if session is not None and (held := self._sessions.drop_held(session, message_id, self._withdraw)) \
                is not None:
            self._not_beginning(held.turn_id)  # a replayed message may be held too
            self._queue_changed(session)
            return held.event
        replay = self._replay(platform, chat_id, thread_id, message_id)
        if replay is not None:
            if not self._inbox.withdraw(replay):
                return None
            self._replays[(platform, replay.event_id)] = None
            return replay
        taken = None if self._accepting() else self._taken(platform, chat_id, thread_id, message_id)
        if taken is None or not self._inbox.withdraw(taken):
            return None
        del self._taken_in_stop[(platform, taken.event_id)]
        return taken

    def _taken(self, platform: str, chat_id: str, thread_id: str | None, message_id: str) -> Inbound | None:
        """The event of the message taken once the stop had begun (`taken_in_stop`), if it is answered as it was
        written (`_as_written`)."""
        return _as_written(self._taken_in_stop.values(), self._is_command, platform, chat_id, thread_id, message_id)

    def _withdraw(self, event: Inbound) -> bool:
        """`Inbox.withdraw` ``event``, unless its turn is too late to drop (`replaying`)."""
        return (event.platform, event.event_id) not in self._too_late and self._inbox.withdraw(event)

    @staticmethod
    def _kept(platform: str, chat_id: str, message_id: str) -> bool:
        log.debug("%s chat %s: message %s was deleted, but does not wait for its turn; left as it is",
                  platform, chat_id, message_id)
        return False

    def _edit(self, event: Inbound, text: str) -> Inbound | None:
        """``event`` as its user edited it to ``text``, so in the inbox too; None if it is left as it is."""
        if event.text == text:  # handed over again (its commit refused before), or edited back
            return event
        if self._is_command(text) and not event.forwarded:
            log.debug("%s chat %s: message %s was edited into a command; left as it is", event.platform,
                      event.chat_id, event.message_id)
            return None
        edited = dataclasses.replace(event, text=text)
        if not self._inbox.edit(edited):
            log.debug("%s chat %s: message %s was edited, but its event %s no longer waits; left as it is",
                      event.platform, event.chat_id, event.message_id, edited.event_id)
            return None
        log.info("%s chat %s: message %s (event %s) was edited while it waited for its turn; it is answered"
                 " as edited", event.platform, event.chat_id, event.message_id, edited.event_id)
        return edited

    @staticmethod
    def _left(platform: str, chat_id: str, message_id: str) -> bool:
        log.debug("%s chat %s: message %s was edited, but does not wait for its turn; left as it is",
                  platform, chat_id, message_id)
        return False

    def _waiting(self, platform: str, chat_id: str, thread_id: str | None, message_id: str) -> WorkItem | None:
        """The queued turn of the message, if it waits for one of its own and is answered as it was written."""
        found = self._queued(platform, chat_id, thread_id, message_id)
        item = found[1] if found is not None else None
        return item if item is not None and item.event is not None and item.text == item.event.text else None

    def _queued(self, platform: str, chat_id: str, thread_id: str | None,
                message_id: str) -> tuple[GatewaySession, WorkItem] | None:
        """The message's session and queued turn, if it waits for one of its own (not an album's, its items
        gathered: one of them is not the message)."""
        session = self._sessions.find(platform, chat_id, thread_id)
        for item in session.queue if session is not None else ():
            event = item.event
            if item.kind == "message" and event is not None and event.message_id == message_id:
                too_late = event.aliases or (event.platform, event.event_id) in self._too_late
                return (session, item) if not too_late else None
        return None

    def _replay(self, platform: str, chat_id: str, thread_id: str | None, message_id: str) -> Inbound | None:
        """The replayed event of the message not queued again yet, if it is answered as it was written
        (`_as_written`)."""
        return _as_written((event for event in self._replays.values() if event is not None), self._is_command,
                           platform, chat_id, thread_id, message_id)


def _as_written(events: Iterable[Inbound], is_command: Callable[[str], bool], platform: str, chat_id: str,
                thread_id: str | None, message_id: str) -> Inbound | None:
    """The event of ``events`` of the message, if it is answered as it was written: not an album, nor a command
    (``/new plan the trip`` too), routed as it came."""
    for event in events:
        if (event.platform, event.chat_id, event.thread_id, event.message_id) == (platform, chat_id, thread_id,
                                                                                  message_id):
            return None if event.aliases or (is_command(event.text) and not event.forwarded) else event
    return None
