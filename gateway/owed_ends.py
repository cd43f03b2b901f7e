"""Turn ends the store refused (a full disk), owed until they can be recorded.

A turn's end records what answers its messages — its reply or note, its delegation's outcome, the
transcript holding the turn — and then settles them. When the store refuses any of that the turn
ends all the same, for its chat to go on, and its end is owed: kept on the session
(`GatewaySession.owed`, in memory), oldest first, and paid before the session's next turn begins,
with every later turn's end (in the same commit as that turn's transcript, which holds the owed
turns too), at ``/new`` before the old generation's transcript is replaced, for a session that has
no worker by `gateway.turn_runner.TurnRunner` trying again, backing off up to a minute, and by the
retention sweep (`gateway.retention`), so that an idle chat's answer goes out soon after the store
takes writes again, not with its next message; and at a graceful stop, so that the next start does
not run again turns whose ends the store would take. Only a session that has no worker (no turn runs
or waits) is paid so: a worker pays its session's before each turn and with each turn's end, and a
transcript stored while a turn runs would hold that turn half done (as would one of a turn the
shutdown cut short). Every pay runs on the event loop with no await between its first write and its
last, so no two overlap. Paying repeats nothing: the outbox journals a key once, a delegation's
first outcome stands, settling twice is settling once, and the transcript is stored from where the
stored one ends (`GatewaySession.unsaved_from`). An end still owed when the gateway has stopped
leaves its messages unsettled and nothing of its turn in the stored transcript: the next start runs
the turn again, as after a crash; one whose answer was journaled runs showing nothing in the chat, which
has that answer, and stores that answer as the turn's reply (`answer_shown`, `gateway.turn_runner`). So does one
that ended with no answer of its own, what it sent with ``send_message`` or ``send_file`` saying it all: its end
marks that where a reply would be journaled (`Outbox.mark_answered_by_sends`), owed as a reply is when refused; a
turn a death cut short after such sends, before it ended, has no mark, and answers when it runs again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple

from gateway.long_messages import CUT_PART, FILE_PART

if TYPE_CHECKING:
    from gateway.outbox import Outbox
    from gateway.session_registry import SessionRegistry
    from gateway.sessions import EndMessage, GatewaySession, OwedEnd, RunningTurn
    from gateway.store import Inbox


def answered_before(outbox: Outbox, running: RunningTurn) -> bool:
    """Whether ``running`` runs again a turn whose answer an earlier run journaled (it died while the turn's end
    was owed): the chat has that answer, which the outbox keeps under its key, so this run shows nothing more of
    the turn there (`gateway.turn_runner`, and the chat services its model calls). So does a turn that ended with
    no answer of its own, what it sent saying it all (`Outbox.mark_answered_by_sends`); one a death cut short after
    its sends, before it ended, has no such mark, and answers."""
    return running.replay and _answered(outbox, _answer_key(running))


def reply_journaled(outbox: Outbox, turn_id: str) -> bool:
    """Whether an earlier run of the message turn ``turn_id`` journaled its answer, or ended answered by its sends
    (`answered_before`)."""
    return _answered(outbox, f"{turn_id}:reply")


def _answered(outbox: Outbox, key: str) -> bool:
    return outbox.journaled(f"{key}:0") or outbox.answered_by_sends(key)


def answer_shown(outbox: Outbox, platform: str, running: RunningTurn) -> str | None:
    """The answer an earlier run of ``running``'s turn journaled (`answered_before`), as the chat has it: the texts
    of its parts, and of the pieces of one the platform refused as too long, in order, then the note of a tail past
    the parts' bound (``answer.md``'s caption, or what was left out: `gateway.long_messages`), whose text is lost
    with the run that wrote it. The turn's reply in the conversation that its run again stores, in place of what
    that run's model wrote: the model of the turns after reads what the chat read, an answer that goes on past its
    parts too. For a turn answered by its sends (`Outbox.mark_answered_by_sends`), what they said: the texts of its
    ``send_message`` calls and the captions of its ``send_file`` calls, in order (not the gateway's notes of one
    that failed), empty for files alone without captions. None if none."""
    key = _answer_key(running)
    prefix, tails = f"{key}:", (key + CUT_PART, key + FILE_PART)
    parts = [message["text"] for message in outbox.turn_messages(platform, running.turn_id)
             if message["key"] in tails
             or (message["key"].startswith(prefix) and message["key"][len(prefix):].partition("/")[0].isdigit())]
    if parts or not outbox.answered_by_sends(key):
        return "\n\n".join(parts) or None
    # Each part whole (a re-split one's pieces aside), with the tail of one past the parts' bound. Files alone,
    # without captions, leave the reply empty, as the turn ended: not the words of a run the chat never read.
    return "\n\n".join(text for part, text in outbox.texts_under(f"{running.turn_id}:")
                       if _sent_part(part[len(running.turn_id) + 1:]) and text)


def _sent_part(key: str) -> bool:
    """Whether ``key`` (past ``{turn}:``) is a part of one of the turn's sends (``message:{n}:{i}``, ``file:{n}:0``)
    or the tail of one past the parts' bound: not a re-split part's piece (``{i}/…``), nor a note of the gateway's
    about one (late, `gateway.late_notes`, or missing, `gateway.part_notes`), which the chat read from the gateway,
    not from the turn."""
    what, _, rest = key.partition(":")
    rest = rest.partition(":")[2]
    return what in ("message", "file") and (rest.isdigit() or f":{rest}" in (CUT_PART, FILE_PART))


def _answer_key(running: RunningTurn) -> str:
    return f"{running.turn_id}:{'completion' if running.kind == 'completion' else 'reply'}"


def _what(message: EndMessage) -> str:
    """``message``, as the log names it when the store refuses it."""
    return "its note" if message.note else "the mark that its messages were its answer" if message.sends \
        else "its reply"


class Unpaid(NamedTuple):
    """The first thing the store refused of the owed end of turn ``turn_id``: ``what`` of it."""

    turn_id: str
    what: str
    error: sqlite3.Error


class OwedEnds:
    """Pays the turn ends a session owes; each call tries once and stops at the first refusal."""

    def __init__(self, registry: SessionRegistry, outbox: Outbox, inbox: Inbox,
                 completion_ended: Callable[[str, str, str | None], None], *,
                 transaction: Callable[[], AbstractContextManager[object]]) -> None:
        """``transaction``: the store's (`lifecycle.SqliteDatabase.transaction`), for writes that stand or
        fall together."""
        self._registry = registry
        self._outbox = outbox
        self._inbox = inbox
        self._completion_ended = completion_ended
        self._transaction = transaction

    def owe(self, session: GatewaySession, end: OwedEnd) -> None:
        """A turn's end, to be paid after those owed before it (at once, by `pay`, if it can be)."""
        session.owed.append(end)

    def send(self, session: GatewaySession) -> Unpaid | None:
        """Journal the messages the session's owed ends hold, oldest first: before the reply of a turn
        that ends after them, for the chat to read the answers in order. Split here, on the loop: a
        reply the store refused is rare. Returns the first one refused (it and those after stay owed)."""
        for end in session.owed:
            if end.message is not None:
                message = end.message
                try:
                    if message.sends:
                        self._outbox.mark_answered_by_sends(message.key)
                    else:
                        self._outbox.enqueue(*session.chat, message.text, kind=message.kind, key=message.key,
                                             turn_id=message.turn_id, reply_to=message.reply_to)
                except sqlite3.Error as exc:
                    return Unpaid(end.turn_id, _what(message), exc)
                end.message = None
        return None

    def pay(self, session: GatewaySession) -> Unpaid | None:
        """`_pay`. Refused, the messages of the owed turns whose answers are journaled are no longer marked
        begun (`Inbox.reopen`): those turns are over, and a death before their ends are recorded is no fault
        of theirs. Charged to them, a message answered already would be set aside with an apology
        (`gateway.dead_letters`), as a completion turn's results would be sent twice once its outcome is
        refused (`gateway.ledger_failures.CompletionFailures.completion_over`). A turn whose answer is owed
        too keeps its marks, as a completion turn does: a death then loses that answer, and is charged; so is
        one should the store refuse this too. The messages steered into a turn whose answer is journaled are
        marked as read within it (`Inbox.read_into`): a restart runs them within its run again, which that
        answer answers, not as turns of their own, answered twice."""
        unpaid = self._pay(session)
        if unpaid is not None:
            try:
                for end in session.owed:
                    # No message is also a turn that ended with none (a silenced completion turn, one the shutdown
                    # cut short): unless its sends said it all (marked so), it runs again as any other, and the
                    # messages steered into it keep their own turns. Given its id, each was answered under the
                    # rerun's key, which the outbox took for the rerun's answer: never sent.
                    answered = end.message is None and reply_journaled(self._outbox, end.turn_id)
                    for event in end.events if end.message is None else ():
                        self._inbox.reopen(event.platform, event.event_id)
                        if answered:
                            self._inbox.read_into(event.platform, event.event_id, end.turn_id)
            except sqlite3.Error:
                pass  # refused as the end was, which the turn's one line about it names
        return unpaid

    def _pay(self, session: GatewaySession) -> Unpaid | None:
        """Record what the session's owed ends owe, oldest first, one step for all of them before the
        next: their messages, their delegations' outcomes, then the session's transcript and their
        messages' settling. They are paid, and forgotten, once their messages are settled; the first
        refusal stops the rest, and is returned: they all stay owed, less what of them went through.
        The transcript comes after every message and outcome, and is stored in one transaction with the
        settling: no transcript holding a turn is stored without the turn's settling, which would have a
        restart run the turn again on a transcript that already holds it. A settling refused undoes the
        transcript, also when a full disk rolled the whole batch back (its other writes are written again,
        not the transaction's: `lifecycle.SqliteDatabase`); a commit refused later takes, or writes again,
        the whole batch."""
        if not session.owed:
            return None
        if (unpaid := self.send(session)) is not None:
            return unpaid
        for end in session.owed:
            if end.outcome is not None:
                try:
                    self._completion_ended(*end.outcome)
                except sqlite3.Error as exc:
                    return Unpaid(end.turn_id, "its delegation's outcome", exc)
                end.outcome = None
        step = (session.owed[0].turn_id, "its transcript")  # what a refusal stops at

        def settle() -> None:
            nonlocal step
            for end in session.owed:
                step = (end.turn_id, "its messages' settling")
                for event in end.events:
                    self._inbox.settle(event.platform, event.event_id)

        try:
            with self._transaction():
                self._registry.store_transcript(session, then=settle)
        except sqlite3.Error as exc:
            return Unpaid(*step, exc)
        session.owed.clear()
        return None

