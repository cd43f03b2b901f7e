"""Answering a chat command (or a refusal): journaling the answer, and settling the event it answers.

A command's answer goes to the chat and thread the command came from, keyed by the event so that
one answered before a restart is not answered again, and its event is settled only once the answer
is journaled. A plugin's command runs beside intake (its handler may take its time), counted so a
stop waits for it; an answer of its the state database refuses to journal (a full disk) is kept and
journaled once it can be, its handler not run again. A built-in command's answer the database refuses is
kept too, and the event, handled again once the database can write, journals that answer without running
the command again (`run`, `kept_if_refused`). Kept answers live in memory: a stop journals them once more
(`journal_kept`), so that a disk with room again before their next try does not have the next start run
their commands again. Kept apart from `gateway.app`'s intake, which only decides that an event is a
command and hands it here.

A chat's commands are answered in the order they were sent (a pasted block of them, one after the other): a command
that comes while an earlier one of its chat is still being answered (a plugin's, taking its time) is run as it comes,
and its answer waits for the earlier ones' (`answer_in_line`). Only ``/stop`` and ``/new`` are answered at once
(`gateway.commands.ANSWERED_AT_ONCE`); a ``/stop`` also lets the answers waiting in its chat go as soon as they are
ready (`let_go`), so a handler that hangs holds up its chat's later answers only until the next ``/stop``. In a
group each member's commands are in a line of their own (`_line_of`): another member's ``/help`` does not wait for
one member's slow ``/deploy``. An answer waiting in line is kept in the store (`_keep`): after a crash its event,
handled again, is answered with it, its command not run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agent import Clock
from gateway.commands import Command, Commands
from gateway.dead_letters import FIRST_PAUSE_SECONDS, MAX_PAUSE_SECONDS, DeadLetterPolicy
from gateway.outbox import Outbox
from gateway.sessions import GatewaySession, quote_of
from gateway.store import Inbox
from gateway.turn_runner import TRACKS_TURN_IDS
from platforms.base import Inbound
from platforms.not_recorded import storage_refusal

log = logging.getLogger("gateway.app")  # intake's lines, wherever they are written from

KEPT_AT_MOST = 200_000
"""The longest answer (in characters) kept in the store while it waits in line (`CommandAnswers._keep`): some three
times what the outbox journals of one (`gateway.long_messages.DEFAULT_MAX_PARTS`), written on the event loop in a few
milliseconds. A plugin's answer of megabytes, kept, held every chat some 160-300 ms per 10 MB, and the database
for the inbox's week; it is not kept, and only a crash before it is given runs its command again, as it did."""


def answer_key(inbound: Inbound) -> str:
    return f"cmd-{inbound.platform}-{inbound.event_id}"


@dataclass(slots=True)
class _Kept:
    """An answer the store refused to journal, with what journaling it takes."""

    inbound: Inbound
    text: str
    turn_id: str | None
    settles: bool
    """Journaled, its event is settled: not for ``/new``'s with text after it, whose event the text's turn settles
    (then it waits for that turn, as `gateway.app.Gateway._dispatch` leaves it)."""
    task: asyncio.Task | None = None
    """A plugin command's answer: the task trying it again (`_journal`), ended once `journal_kept` journals it."""


@dataclass(slots=True)
class _Line:
    """A chat's commands being answered aside, in the order sent (`CommandAnswers.answer_in_line`)."""

    let_go: asyncio.Future[None]
    """Done at a ``/stop`` in the chat: its answers wait no more for those before them."""
    last: asyncio.Future[None] | None = None
    """Done once the latest command of the chat is answered (or given up): the next one's answer waits for it."""


class CommandAnswers:
    def __init__(self, outbox: Outbox, inbox: Inbox, commands: Commands, dead_letters: DeadLetterPolicy, *,
                 accepting: Callable[[], bool], clock: Clock) -> None:
        """``accepting()``: the gateway takes events (a plugin's answer failing while it stops is not counted).
        ``clock``: what the pauses between tries to journal a refused answer sleep on."""
        self._outbox, self._inbox, self._commands, self._dead_letters = outbox, inbox, commands, dead_letters
        self._accepting, self._clock = accepting, clock
        self.aside: set[asyncio.Task] = set()
        """Commands being answered beside intake (`answer_in_line`)."""
        self._unjournaled: dict[tuple[str, str], _Kept] = {}
        """By (platform, event id): the answers of commands that ran, which the store refused to journal
        (`kept_if_refused`, `_journal`)."""
        self._lines: dict[tuple[str, str | None], _Line] = {}
        """By session key and, in a group, member (`_line_of`): the lines with a command being answered aside
        (`answer_in_line`)."""

    async def run(self, session: GatewaySession, command: Command, inbound: Inbound) -> str:
        """`Commands.run` for a built-in command, unless it ran already for ``inbound`` and the store refused to
        journal its answer (a full disk, a lock): then that answer. The refusal has the event handled again
        (`DeadLetterPolicy.refused`), and run again the command did its work twice: a second ``/new`` started
        yet another session, forgetting what was said since the first, a second ``/stop`` stopped turns begun
        since. Only in this process: a stop the store still refuses the answer at (`journal_kept`) runs the
        command again after the next start, as it does a plugin's."""
        kept = self._unjournaled.get((inbound.platform, inbound.event_id))
        return kept.text if kept is not None else await self._ran(session, command, inbound)

    async def _ran(self, session: GatewaySession, command: Command, inbound: Inbound) -> str:
        """`Commands.run`, unless the command ran before a death and its answer, kept while it waited in line
        (`_keep`), was never given: then that answer."""
        kept = self._inbox.kept_answer(inbound.platform, inbound.event_id)
        return kept if kept is not None else await self._commands.run(session, command, inbound)

    def _keep(self, inbound: Inbound, text: str) -> None:
        """Keep ``text``, the answer of ``inbound``'s command, for as long as it waits in line (`answer_in_line`):
        handled again after a crash meanwhile, the event is answered with it. Else the command ran again, its work
        (a ``/retry``, a plugin's deploy) done twice. Refused (a full disk), it is not kept, and still given in its
        turn: only a crash before then runs the command again, as it did before. Never raises: raised, it cost the
        answer of a command whose work is done. Nor is an answer past `KEPT_AT_MOST` kept."""
        if len(text) > KEPT_AT_MOST:
            log.info("%s event %s: the answer of its command (%d characters) is too long to keep while it waits:"
                     " a crash before it is given runs the command again", inbound.platform, inbound.event_id,
                     len(text))
            return
        try:
            self._inbox.keep_answer(inbound.platform, inbound.event_id, text)
        except Exception as exc:
            log.warning("%s event %s: the state database refused to keep the answer of its command while it waits"
                        " (%s: %s): a crash before it is given runs the command again", inbound.platform,
                        inbound.event_id, type(exc).__name__, exc)

    @contextlib.contextmanager
    def kept_if_refused(self, inbound: Inbound, text: str, turn_id: str | None = None, *,
                        settles: bool = True) -> Iterator[None]:
        """Journal ``text``, the answer a command gave to ``inbound`` (with ``turn_id``), in the block: if the store
        refuses it (`storage_refusal`), the answer is kept for `run` to give when the event is handled again, and
        for `journal_kept`; once the block has journaled it, it is forgotten. ``settles``: the block settles the
        event too (`answer`); else it only sends the answer (`/new` with text after it). Raises what the block
        raises."""
        key = (inbound.platform, inbound.event_id)
        try:
            yield
        except Exception as exc:
            if storage_refusal(exc):
                self._unjournaled[key] = _Kept(inbound, text, turn_id, settles)
            raise
        self._unjournaled.pop(key, None)

    def journal_kept(self) -> int:
        """At a stop, after the events' tries again are cancelled: journal the answers the store refused, once more.
        Kept in memory only, each was lost to the stop, and the next start ran its command again: a second
        ``/new`` started yet another session, a plugin's handler did its work (a deploy) twice. An answer whose
        event the text after a ``/new`` waits on is journaled, and the event left for the next start to queue
        that text (`gateway.app.Gateway._dispatch` finds the answer and does not run ``/new`` again). Refused
        again (the disk still full), an answer stays as it was: one line says so. Returns how many were
        journaled; never raises."""
        journaled = 0
        for key, kept in list(self._unjournaled.items()):
            inbound = kept.inbound
            try:
                if kept.settles:
                    self.answer(inbound, kept.text, kept.turn_id)
                else:
                    self.send(inbound, kept.text, kept.turn_id)
                    self._inbox.reopen(inbound.platform, inbound.event_id)  # its text waits for its turn
            except Exception as exc:
                log.warning("%s event %s: the state database still refuses the answer of its command at the stop "
                            "(%s: %s): the command runs again after the next start", inbound.platform,
                            inbound.event_id, type(exc).__name__, exc)
                continue
            journaled += 1
            del self._unjournaled[key]
            if kept.task is not None:
                kept.task.cancel()  # its answer is in: no need to wait out its pause before the next try
        return journaled

    def waits(self, session: GatewaySession, inbound: Inbound) -> bool:
        """Whether a command of ``inbound``'s line (`_line_of`) is still being answered aside: one coming now is
        answered after it (`answer_in_line`), unless answered at once (`gateway.commands.ANSWERED_AT_ONCE`)."""
        return _line_of(session, inbound) in self._lines

    def let_go(self, session: GatewaySession) -> None:
        """A ``/stop`` in ``session``'s chat: the answers waiting there for earlier ones (any member's) go as soon as
        they are ready. Else a plugin's handler that hangs held every later command of the chat unanswered, with no
        way out but a restart, which asked the handler again first."""
        for key in [key for key in self._lines if key[0] == session.key]:
            self._lines.pop(key).let_go.set_result(None)

    def answer_in_line(self, session: GatewaySession, inbound: Inbound, command: Command,
                       turn_id: str | None = None, *, text: str | None = None) -> None:
        """Answer a command beside intake, after the commands of its chat sent before it. A plugin's command (no
        ``text``) runs at once: its handler may take its time (another service to ask), and no other chat's event,
        nor a message of its own chat, waits for it. ``text``: the answer of a built-in command that ran already,
        which a plugin's command before it keeps waiting. Its event is settled once it is answered, so a stop
        before then runs it again after the next start. The handler's failures are its answer (`Commands.run`);
        what fails after it is journaling that answer (`_journal`). An answer that has to wait is kept in the store
        meanwhile (`_keep`): a crash then does not run its command again."""
        key = _line_of(session, inbound)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line(asyncio.get_running_loop().create_future())
        before, done = line.last, asyncio.get_running_loop().create_future()
        line.last = done

        async def answer() -> None:
            try:
                said = await self._ran(session, command, inbound) if text is None else text
                if before is not None and not before.done():
                    self._keep(inbound, said)
                    # Never awaited directly: a waiter cancelled (a stop) would cancel what the next one waits on.
                    try:
                        await asyncio.wait([before, line.let_go], return_when=asyncio.FIRST_COMPLETED)
                    except asyncio.CancelledError:
                        # A stop while the one before hangs: answered now, out of turn. Else the command, its work
                        # done (a plugin's deploy, a /retry), ran again after the next start.
                        await self._answered_at_stop(inbound, said, turn_id)
                        raise
                await self._journal(inbound, said, turn_id)
            except Exception as exc:
                if not self._accepting():  # stopping: the event stays unsettled, handled again after the next start
                    log.warning("answering %s event %s failed while stopping: %s", inbound.platform,
                                inbound.event_id, type(exc).__name__)
                    return
                try:
                    self._dead_letters.failed(inbound, turn_id, exc)
                except Exception:  # its count refused too (a full disk): raised, it would end the task unheard
                    log.exception("%s event %s: answering it failed (%s: %s), and so did counting that; it is not "
                                  "answered now and is kept for the next start", inbound.platform, inbound.event_id,
                                  type(exc).__name__, exc)
            finally:
                done.set_result(None)  # answered, given up or cancelled: the next answer never waits for good
                if line.last is done and self._lines.get(key) is line:
                    del self._lines[key]

        task = asyncio.ensure_future(answer())
        self.aside.add(task)
        task.add_done_callback(self.aside.discard)

    async def _answered_at_stop(self, inbound: Inbound, text: str, turn_id: str | None) -> None:
        """Journal the answer of a command that ran and was waiting for the one before it when the stop cancelled it.
        Never raises: refused (a full disk), the command runs again after the next start, as `journal_kept` says."""
        try:
            await self._answer_long(inbound, text, turn_id)
        except (Exception, asyncio.CancelledError) as exc:
            log.warning("%s event %s: the answer of its command could not be journaled at the stop (%s): the command "
                        "runs again after the next start", inbound.platform, inbound.event_id, type(exc).__name__)

    async def _journal(self, inbound: Inbound, text: str, turn_id: str | None) -> None:
        """`_answer_long` with the text a plugin's handler gave, tried again while the store refuses it (a full disk,
        a lock: `storage_refusal`), after a pause that doubles, until it takes it or the gateway stops. Handled
        again instead (`DeadLetterPolicy`), the command ran its handler once more for each try: what the
        handler did (a deploy, a ticket filed) was done again, and a disk full for a few tries set the command
        aside with an apology though its handler had done its work. Answering is idempotent (keyed by the
        event): a try whose writes SQLite rolled back and writes again later journals it once. Raises what
        else answering raises, and a refusal while the gateway stops (the event is kept for the next start)."""
        tries = 0
        key = (inbound.platform, inbound.event_id)
        while True:
            try:
                await self._answer_long(inbound, text, turn_id)
                self._unjournaled.pop(key, None)
                return
            except Exception as exc:
                if not storage_refusal(exc) or not self._accepting():
                    self._unjournaled.pop(key, None)
                    raise
                self._unjournaled[key] = _Kept(inbound, text, turn_id, True, asyncio.current_task())
                tries += 1
                # Bounded before the power: a disk full for hours makes thousands of tries.
                pause = min(MAX_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2 ** min(tries - 1, 16))
                (log.warning if tries == 1 else log.debug)(
                    "%s event %s: the state database refused the answer of its command (%s: %s); the answer is"
                    " kept and journaled once the database can be written, tried again in %.1fs; its handler is"
                    " not run again", inbound.platform, inbound.event_id, type(exc).__name__, exc, pause)
            await self._clock.sleep(pause)

    async def _answer_long(self, inbound: Inbound, text: str, turn_id: str | None) -> None:
        """`answer`, the text split (and the ``answer.md`` of one too long for the chat written) in a worker thread
        first (`Outbox.enqueue_long`): a plugin's answer may be megabytes, and on the event loop 10 MB held every
        chat some 100 ms (near a second heavy with formatting). What the chat's turn journals meanwhile may come
        first, as it would had the handler taken that much longer. Cancelled meanwhile (a stop), the answer is
        journaled and its event settled first, then the cancellation raised: else the handler, whose work is done,
        ran again after the next start."""
        key = answer_key(inbound)
        try:
            await self._outbox.enqueue_long(*self._where(inbound), text, kind="command", key=key,
                                            reply_token=inbound.reply_token, reply_to=quote_of(inbound),
                                            turn_id=self._turn_id(inbound, turn_id), journal_if_cancelled=True)
        except asyncio.CancelledError:
            if self._outbox.journaled(f"{key}:0"):
                self._inbox.settle(inbound.platform, inbound.event_id)
            raise
        self._inbox.settle(inbound.platform, inbound.event_id)

    def answer(self, inbound: Inbound, text: str, turn_id: str | None = None) -> None:
        """Answer a command (or a refusal): the event is handled once the answer is journaled."""
        self.send(inbound, text, turn_id)
        self._inbox.settle(inbound.platform, inbound.event_id)

    def send(self, inbound: Inbound, text: str, turn_id: str | None = None) -> None:
        """To the chat (and thread) the event came from, as its session's messages go. In a group it
        quotes the event: several members' commands and their answers interleave there. ``turn_id``:
        the id the event's caller reads it by, kept only where a caller follows turn ids (webhooks)."""
        self._outbox.enqueue(*self._where(inbound), text, kind="command", key=answer_key(inbound),
                             reply_token=inbound.reply_token, reply_to=quote_of(inbound),
                             turn_id=self._turn_id(inbound, turn_id))

    @staticmethod
    def _where(inbound: Inbound) -> tuple[str, str, str | None]:
        return inbound.platform, inbound.chat_id, inbound.thread_id

    @staticmethod
    def _turn_id(inbound: Inbound, turn_id: str | None) -> str | None:
        return turn_id if inbound.platform in TRACKS_TURN_IDS else None


def _line_of(session: GatewaySession, inbound: Inbound) -> tuple[str, str | None]:
    """The line a command's answer waits in: its chat's, and in a group its member's too. A pasted block is one
    member's; a line of the whole group held every member's ``/help`` behind one member's hung ``/deploy``."""
    return session.key, None if inbound.is_private else inbound.user_id
