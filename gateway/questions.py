"""Questions the model asks in chat (the ``clarify`` tool).

The question goes to the chat as a reply of the running turn, and the chat's next
message — whatever `display.busy_input_mode` says — is its answer; a number picks
one of the offered choices. In a group, not one replying to another message than the question
(`Questions.replies_elsewhere`). Only a message that comes once the question may be in the chat:
one written while the question still waits to be sent (behind a 429) answers nothing the user
could see, and is handled as any message while a turn runs; so is one sent before the question was
asked (`Inbox.sent_before`: sent while the gateway was down, handed over back to back after the start).
A question nobody answers within `agent.clarify_timeout_seconds` is given up on visibly: the chat is told, and the
model carries on without the answer. The answer's event is settled as soon as it is
handed over, so a restart re-asks the question (the replayed turn asks it again, as
a new message) instead of replaying the answer as a message of its own. What the chat
writes in the replayed turn before it asks again is held for that question (`Questions.hold`), a message
after that queued behind the turn (`Questions.holds_answer`);
only a replay (`RunningTurn.replay`) looks for questions an earlier run asked. One the earlier run
journaled and did not get sent before it died is in the chat as soon as it may have gone out (tried
before the death and not refused at its one try, or now); one that cannot have gone out before the
death (`never_out`) is dropped at the start, before the outbox sends it, whether or not the turn run
again asks again (a model may decide otherwise the second time: `Questions.drop_left_unsent`), and one
the chat cannot have yet is dropped as the turn asks again, as a stop drops it. While a question
waits, the turn's events (its message's, and those steered into it) are not marked begun in the
inbox, nor a completion turn's delivery in the ledger: the turn is idle, and a gateway dying then
(another chat's poison message, an OOM) is charged to none of them (`gateway.dead_letters`,
`gateway.ledger`); they are marked again, durably, before the turn goes on. Not so while children
the turn launched run in this process (`HostView.runs_here`): they may be what brings it down, and
the turn run again launches them again.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence

from agent import Clock, ToolError
from gateway import senders
from gateway.late_notes import age_text
from gateway.outbox import Outbox
from gateway.owed_ends import answered_before
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession, RunningTurn, WorkItem
from gateway.store import OutboxRow
from gateway.store.inbox import Inbox
from platforms.base import Inbound, RateLimited
from platforms.formatting.blank import is_blank

log = logging.getLogger("gateway.questions")

NOT_NOW = "The chat cannot be asked right now; proceed with your best judgement."
UNANSWERABLE = "Nobody can answer here any more (the input has ended): I go on without an answer."
FILE_WAITS = "📎 The question above still waits for a written answer; your file or voice note is read after it."
LATE = 2.0
"""Seconds a timeout's sleep may return late before the process counts as having been paused."""
PAUSE_GRACE = 10.0
"""Seconds a question still waits after a pause: the platform's next poll (a long poll timed out, a
socket read again) hands over an answer the user sent meanwhile."""


OPTIONS = "Options:"
"""Said above the choices of a question that has a numbered list of its own (`question_text`)."""
_NUMBERED = re.compile(r"^\s*[0-9]{1,9}[.)](?:\s|$)", re.MULTILINE)
"""A line that Markdown may read as an item of a numbered list (``2.`` or ``2)``)."""


def shown_choice(choice: str) -> str:
    """``choice`` as one item of the numbered list: on one line, its line breaks as spaces. Shown as written,
    ``a\\nb`` read as two items, ``a\\n2. b`` renumbered the choices after it (the number picked the one
    below the one meant), and a blank line in it ended the list."""
    return " ".join(line.strip() for line in choice.splitlines() if line.strip())


def checked(question: str, choices: Sequence[str] | None) -> None:
    """`ToolError`, naming what is wrong, for a question or choice that shows nothing: the ``clarify``
    tool refuses whitespace, not the zero-width characters a chat shows as nothing too (`is_blank`),
    and a plugin's tool may call this service itself. Asked, the chat got a bare "❓" to answer, or an
    option numbered with nothing beside it that its number still picked."""
    if not isinstance(question, str):
        raise ToolError(f"the question is {type(question).__name__}, not text; nothing was asked")
    if is_blank(question):
        raise ToolError("the question is only whitespace or invisible characters; nothing was asked. "
                        "Write the question")
    for number, choice in enumerate(choices or (), 1):
        if not isinstance(choice, str):
            raise ToolError(f"choice {number} is {type(choice).__name__}, not text; nothing was asked")
        if is_blank(choice):
            raise ToolError(f"choice {number} is only whitespace or invisible characters; nothing was asked. "
                            "Leave it out")


def question_text(question: str, choices: Sequence[str] | None, timeout: float, *, private: bool = True,
                  answerable: bool = True) -> str:
    """The question as Markdown: the choices a numbered list of their own (blank lines around
    it, so that no platform's rendering runs the last line into the list), each on one line
    (`shown_choice`). Under a question with a numbered list of its own, `OPTIONS` comes first: right
    after that list, the choices continued it (Markdown read one list, the renderers numbered the
    choices 3, 4, …), and anywhere in the question, a number read as one of either list. Not ``private``: a
    group, where the bot hears only what is addressed to it (Telegram, a Discord channel), and
    a reply to the question always is. Not ``answerable``: nobody is left to answer (`input_ended`)."""
    blocks = [f"❓ {question.strip()}"]
    if choices:
        if _NUMBERED.search(question):
            blocks.append(OPTIONS)
        blocks.append("\n".join(f"{i}. {shown_choice(choice)}" for i, choice in enumerate(choices, 1)))
    if not answerable:
        blocks.append(UNANSWERABLE)
        return "\n\n".join(blocks)
    pick = " (a number picks an option)" if choices else ""
    how = "Answer with your next message" if private else "Reply to this message to answer"
    blocks.append(f"{how}{pick}; I wait {age_text(timeout)}.")
    return "\n\n".join(blocks)


def expired_text(timeout: float) -> str:
    return f"⏰ No answer within {age_text(timeout)}: going on without one."


OPTION_NUMBER = re.compile(r"[#＃]?\s*[(（]?\s*(\d{1,6})\s*[.)．）]?")
"""An option's number as people write it: ``2``, ``2.``, ``(2)``, ``#2``, in full-width forms too.
Its digits are decimal digits of any script, each of which `int` reads (a superscript ``²`` is none)."""
_MENTION = r"@\w++"
"""A mention as written, whole (``@bot2`` holds no number). Telegram hands the bot's own over with the text, and a
group's message reaches the bot only with it or as a reply: the number beside it picks as well as one alone."""
MENTIONED_NUMBER = re.compile(rf"(?:{_MENTION}\s*[,:]?\s*)?{OPTION_NUMBER.pattern}(?:\s+{_MENTION})?")
"""An option's number with a mention before it or after it: ``@bot 2``, ``@bot, 2``, ``2 @bot``."""


def chosen(answer: str, choices: Sequence[str] | None) -> str:
    """The answer, with an option's number, alone or beside a mention (`MENTIONED_NUMBER`), replaced by that
    option."""
    text = answer.strip()
    number = MENTIONED_NUMBER.fullmatch(text) if choices else None
    if number and 1 <= int(number[1]) <= len(choices):
        return choices[int(number[1]) - 1]
    return text


def question_part(key: str, turn_id: str) -> tuple[str, str] | None:
    """``(run, number)`` when the outbox key ``key`` is of a part of a question turn ``turn_id`` asked
    (``<turn>:ask:<run>:<number>:<part>``); None for any other, a line said under one included (its wait
    ran out, say)."""
    prefix = f"{turn_id}:ask:"
    if not key.startswith(prefix):
        return None
    run, _, rest = key[len(prefix):].partition(":")
    number, _, part = rest.partition(":")
    return (run, number) if run and number.isdigit() and part.isdigit() else None


def of_question(key: str, turn_id: str, number: int) -> bool:
    """Whether the outbox key ``key`` is of a part of question ``number`` turn ``turn_id`` asked, in any run
    (``<turn>:ask:<run>:<number>:<part>``), or of a piece of one the platform refused as too long
    (``…:<part>/<piece>``); not of a line said under it (its wait ran out, say)."""
    prefix = f"{turn_id}:ask:"
    if not key.startswith(prefix):
        return False
    run, _, rest = key[len(prefix):].partition(":")
    of, _, part = rest.partition(":")
    return bool(run) and of == str(number) and part.partition("/")[0].isdigit()


def words(text: str) -> str:
    """``text`` with its whitespace collapsed: a question split to the platform's limit is the same
    question, parts joined, whichever whitespace each split took (`Questions._unanswered`)."""
    return " ".join(text.split())


def never_out(row: OutboxRow) -> bool:
    """Whether the pending part ``row``, journaled before the start, cannot have reached the chat: never
    tried, or tried once and refused with a 429 (`RateLimited`, as the sender records it). Refused more
    often, it is not known whether an attempt before the last refusal was taken, its answer lost (a
    network error). The one refusal's wait may have been over before the process died, but a try made
    then is recorded as soon as it is answered: misread are only a death during that try, and one that
    never got an answer (a restart takes longer than most of Telegram's waits)."""
    refused = (row.last_error or "").partition(":")[0] == RateLimited.__name__
    return not row.tried or (refused and row.attempts == 1)


class _Asking:
    """A turn's questions waiting or asked: one at a time (`Questions.ask`)."""

    __slots__ = ("lock", "count")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.count = 0


class Questions:
    def __init__(self, outbox: Outbox, inbox: Inbox, sessions: SessionRegistry, clock: Clock, timeout: float, *,
                 durable: Callable[[], Awaitable[None]],
                 private: Callable[[GatewaySession, RunningTurn], bool] = lambda session, running: True,
                 busy: Callable[[GatewaySession, RunningTurn], bool] = lambda session, running: False,
                 completion_waits: Callable[[str, bool], None] = lambda delegation_id, waiting: None) -> None:
        """``private(session, running)``: whether the turn's chat is a private one (`question_text`).
        ``durable``: the store's group commit; a turn's events are marked begun again through it.
        ``busy(session, running)``: whether children the turn launched run in this process, so that
        the turn is not idle while it waits (`HostView.runs_here`). ``completion_waits(delegation_id, waiting)``:
        the ledger's mark of a completion turn, as its events are marked for a message's turn
        (`gateway.ledger.Ledger.completion_waits`)."""
        self._busy = busy
        self._completion_waits = completion_waits
        self._outbox = outbox
        self._inbox = inbox
        self._durable = durable
        self._sessions = sessions
        self._clock = clock
        self._timeout = timeout
        self._private = private
        self._deaf: set[str] = set()
        """Platforms whose chats can no longer answer (`input_ended`)."""
        self._waits: dict[str, set[asyncio.Future[str | None]]] = {}
        """The questions waiting for an answer, by platform."""
        self._asking: dict[str, _Asking] = {}
        """By turn id, while a question of the turn waits to be asked or is asked (`ask`)."""
        self._handed: dict[tuple[str, str], str] = {}
        """By (platform, event id): answers handed to a question (`hand_answer`) and not settled yet, to the
        id of the turn that took them."""
        self._left_open: dict[str, tuple[int, str, float] | None] = {}
        """By run id of a turn run again: the question earlier runs left open in the chat, as `_open_before`
        found it last before the run handed an answer itself, while the run has not asked it again."""

    def input_ended(self, platform: str) -> None:
        """Nobody on ``platform`` can answer any more (the terminal chat's piped input ran out): a
        question waiting there, and any asked from now on, goes on at once without an answer,
        instead of waiting out the timeout for one that cannot come."""
        self._deaf.add(platform)
        for waiting in self._waits.pop(platform, set()):
            if not waiting.done():
                waiting.set_result(None)

    async def ask(self, question: str, choices: Sequence[str] | None = None) -> str:
        """The ``clarify`` service of every chat's parent agent: ask the chat of the calling turn. A turn's
        questions are asked one at a time, in the order they were asked: a plugin's tool may ask several at
        once, and a turn waits on one question (`RunningTurn.question`), the one its chat's next message
        answers. A second asked meanwhile took that over: the first was never answered, and once it gave up
        nothing waited on the second either, whose answer ran as a message of its own. A question or
        choice that shows nothing is refused unasked (`checked`)."""
        checked(question, choices)
        calling = self._sessions.calling_turn()
        if calling is None:
            raise ToolError(NOT_NOW)
        session, running = calling
        asking = self._asking.setdefault(running.turn_id, _Asking())
        asking.count += 1
        try:
            async with asking.lock:
                if running.suppressed:  # stopped while an earlier question of the turn waited
                    raise ToolError(NOT_NOW)
                return await self._ask(session, running, question, choices)
        finally:
            asking.count -= 1
            if not asking.count:
                del self._asking[running.turn_id]

    async def _ask(self, session: GatewaySession, running: RunningTurn, question: str,
                   choices: Sequence[str] | None) -> str:
        # By run, not turn: a turn run again after a restart asks again, in a new message.
        number = running.asked
        key = f"{running.turn_id}:ask:{running.run_id}:{number}"
        running.asked += 1
        if answered_before(self._outbox, running):
            # A run of a turn the chat has the answer of (`gateway.owed_ends`): asked after it, the question came
            # under the answer, and the chat's next message, a new request, was taken for its answer.
            raise ToolError(NOT_NOW)
        if session.platform in self._deaf:
            # Shown all the same: what the model wanted to know explains what it did without it,
            # whether the input ended before the question or while it waited.
            self._journal(session, running, question_text(question, choices, self._timeout, answerable=False), key)
            raise ToolError(NOT_NOW)
        text = question_text(question, choices, self._timeout, private=self._private(session, running))
        held = running.held_answer if running.held_for == number else None
        if running.replay:
            self._drop_unseen(session, running, number)
        # Asked word for word before a restart, and not answered: the chat has it already, also
        # while the message that asks again still waits to be sent, and since the earlier run asked it.
        left_open = self._open_before(session, running, number) if running.replay else None
        before = left_open[1:] if left_open is not None and left_open[0] == number else None
        if left_open is None or left_open[0] <= number:  # asked again, or none: not read again
            self._left_open.pop(running.run_id, None)
        shown = before is not None and before[0] == words(text)
        asked_at = before[1] if shown else self._clock.time()
        if held is not None and held.event is not None and shown:
            # Answered as the user saw it before the restart: not asked twice.
            running.held_answer = running.held_home = None
            self._inbox.settle(held.event.platform, held.event.event_id, into_turn=running.turn_id)
            return senders.for_model(chosen(held.text, choices), held.event, replied=False)
        self._journal(session, running, text, key)
        self._read_within(session, running)
        try:
            answer = await self._wait(running, None if shown else f"{key}:0", asked_at, session.platform,
                                      idle=not self._busy(session, running))
        except BaseException:
            # Its turn was stopped (or the gateway stops, and the turn asks again after the start): a
            # question not in the chat yet would ask for an answer nothing waits for any more.
            self._outbox.drop(*session.chat, lambda row: row.key.startswith(f"{key}:"))
            raise
        await self._going_on(running)
        if answer is None and session.platform in self._deaf:  # no answer can come: not one more wait
            # Said under the question, as a question asked from then on says it: the transcript reads
            # the same whether the input ended before the question or while it waited.
            self._outbox.enqueue(*session.chat, UNANSWERABLE, kind="reply", key=f"{key}:unanswerable",
                                 turn_id=running.turn_id, reply_to=running.answers)
            raise ToolError(NOT_NOW)
        if answer is None:
            # In a group it quotes the asker's message, as the question did: whose request goes on without it.
            self._outbox.enqueue(*session.chat, expired_text(self._timeout), kind="reply", key=f"{key}:expired",
                                 turn_id=running.turn_id, reply_to=running.answers)
            return f"(no answer within {age_text(self._timeout)}; proceed with your best judgement)"
        # Anyone in a group may answer: the model reads who did (the asker, or another member).
        return senders.for_model(chosen(answer, choices), running.answered_by, replied=False)

    def _journal(self, session: GatewaySession, running: RunningTurn, text: str, key: str) -> None:
        """Journal the question ``text`` as the turn's reply under ``key``, quoting what the turn's first message
        quotes (`RunningTurn.take_quote`). Refused (a full disk, another process's write lock), the question is
        not asked (the model reads why) and the quote it took goes to the turn's next message, the answer the model
        writes without it."""
        quote = running.take_quote()
        try:
            self._outbox.enqueue(*session.chat, text, kind="reply", key=key, turn_id=running.turn_id, reply_to=quote)
        except Exception:
            running.give_back_quote(quote)
            raise

    def _read_within(self, session: GatewaySession, running: RunningTurn) -> None:
        """The messages steered into the turn that its model read may be what the question asks about: marked as read
        within it (`Inbox.read_into`), a restart runs them within the turn run again, which asks it again, and a
        deletion finds them too late to drop (`gateway.message_edits`). Else each ran as a turn of its own after the
        rerun, which, not having read it, left the question to be answered as a new message."""
        # Nor those that came with the result of a call of the question's answer (`AgentSession.unseen_steers`): in
        # the conversation, but no model call has read them yet.
        agent = session.agent
        read = running.steered[:max(0, len(running.steered) - agent.unread_steers - agent.unseen_steers)]
        try:
            for item in read:
                if item.event is not None:
                    self._inbox.read_into(item.event.platform, item.event.event_id, running.turn_id)
        except sqlite3.Error as exc:  # the question is asked all the same; a restart runs those as turns of their own
            log.warning("could not record that turn %s read the messages steered into it: %s: %s", running.turn_id,
                        type(exc).__name__, exc)

    async def _wait(self, running: RunningTurn, shown_by: str | None, asked_at: float, platform: str, *,
                    idle: bool) -> str | None:
        """The chat's answer, or None once the timeout has passed or nobody on ``platform`` can
        answer any more. ``shown_by``: the key of the question's first part; None when the question
        is in the chat already. ``asked_at``: when the question was first asked (`RunningTurn.asked_at`).
        ``idle``: nothing of the turn's runs meanwhile, so a death is charged to none of its events."""
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        timer = asyncio.ensure_future(self._expiry())
        running.question, running.question_key, running.asked_at = answer, shown_by, asked_at
        running.asked_awake = self._clock.monotonic()
        if idle:
            self._mark(running, self._inbox.reopen, "is idle", waiting=True)
        waits = self._waits.setdefault(platform, set())
        waits.add(answer)
        try:
            await asyncio.wait((answer, timer), return_when=asyncio.FIRST_COMPLETED)
            return answer.result() if answer.done() else None
        finally:
            running.question = running.question_key = running.asked_at = running.asked_awake = None
            waits.discard(answer)
            timer.cancel()
            if not answer.done():
                answer.cancel()

    async def _going_on(self, running: RunningTurn) -> None:
        """The wait is over (answered, or given up on) and the turn goes on: its events are marked
        begun, durably, before it does, so that a death from then on is charged to them again. (Not
        after a stop, whose events are settled, nor a shutdown's: the turn runs again after the start.)"""
        if self._mark(running, self._inbox.begin, "goes on", waiting=False):
            try:
                await self._durable()
            except sqlite3.Error as exc:  # a full disk: it goes on all the same, a death now uncharged
                log.warning("could not record that turn %s goes on after its question: %s: %s", running.turn_id,
                            type(exc).__name__, exc)

    def _mark(self, running: RunningTurn, mark: Callable[[str, str], None], how: str, *, waiting: bool) -> bool:
        """Mark the events of the turn (its message's, and those steered into it) with ``mark``
        (`Inbox.reopen` or `Inbox.begin`), and a completion turn's delivery as ``waiting`` or not; False
        when it has neither, or the database refused."""
        events = [e for e in (running.event, *(item.event for item in running.steered)) if e is not None]
        try:
            for event in events:
                mark(event.platform, event.event_id)
            if running.delegation_id is not None:
                self._completion_waits(running.delegation_id, waiting)
        except sqlite3.Error as exc:  # idle: a death now is charged to it, as before questions waited unmarked
            log.warning("could not record that turn %s %s: %s: %s", running.turn_id, how, type(exc).__name__, exc)
            return False
        return bool(events) or running.delegation_id is not None

    async def _expiry(self) -> None:
        """Sleep out the timeout on the monotonic clock, which goes on while the process is paused
        (SIGSTOP, ``docker pause``): a sleep that returns late was paused, and an answer the user
        sent meanwhile has not been handed over yet, so the question waits `PAUSE_GRACE` more."""
        seconds = self._timeout
        while True:
            due = self._clock.monotonic() + seconds
            await self._clock.sleep(seconds)
            if self._clock.monotonic() - due <= LATE:
                return
            seconds = PAUSE_GRACE

    def hold(self, session: GatewaySession, running: RunningTurn, item: WorkItem) -> bool:
        """Hold the text message ``item`` for the question an earlier run of the turn (before a restart)
        left open in the chat (`_open_before`), which the chat may have answered; False,
        holding nothing, otherwise. The question, if asked again word for word, takes it for its
        answer; else it is a message of its own once the turn ends (`RunningTurn.held_answer`). One message only: a
        later one is a message of its own, queued behind the turn (`holds_answer`)."""
        # Only a replay can have asked before: an ordinary turn reads nothing for each message.
        if not running.replay or running.suppressed or running.question is not None \
                or running.held_answer is not None:
            return False
        left_open = self._open_before(session, running, running.asked)
        # Sent before that question was asked, or replying to another message: not meant for it, whether or not
        # it is asked again.
        if left_open is None or item.event is None or self._inbox.sent_before(item.event, left_open[2]) \
                or self.replies_elsewhere(running, left_open[0], item.event):
            return False
        running.held_answer, running.held_for = item, left_open[0]
        return True

    def holds_answer(self, running: RunningTurn | None) -> bool:
        """Whether the running turn holds a message for a question (`hold`, `hold_across_threads`): a message that
        comes meanwhile is queued behind the turn, whatever `display.busy_input_mode` says, a request of its own.
        Interrupting, a second reply to the question stopped the turn before it asked again, and both replies ran as
        messages of their own, the question's answer lost; steered, the turn could read it before the held answer.
        Only until the turn asks that question: asked otherwise, the held message waits for the turn's end as a message
        of its own, and one sent after that takes the busy mode as any does."""
        return running is not None and running.held_answer is not None and running.asked <= running.held_for

    def hold_across_threads(self, answer: Inbound, turn_id: str, home: Callable[[WorkItem], None]) -> str | None:
        """Hold the text message ``answer`` (accepted with ``turn_id``) for the question an earlier run of a turn in
        another thread of its chat left open (`hold`), which it replies to from its thread, as `hand_across_threads`
        hands one to a question waiting: the id of the turn that holds it, or None. Not taken, it is a message of its
        own in the thread it was written in, queued there by ``home`` where it came (`RunningTurn.held_home`). Else
        the reply sent while the gateway was down opened a turn of its own there, and the question asked again
        waited until it expired."""
        if answer.is_private or answer.reply_to is None or answer.attachments:
            return None
        for session in self._sessions:
            running = session.running
            if session.chat[:2] != (answer.platform, answer.chat_id) or session.chat[2] == answer.thread_id \
                    or running is None or not running.replay or running.suppressed or running.question is not None \
                    or running.held_answer is not None or running.event is None \
                    or running.event.user_id != answer.user_id:
                continue
            left_open = self._open_before(session, running, running.asked)
            if left_open is None or self._inbox.sent_before(answer, left_open[2]):
                continue
            if any(of_question(part["key"], running.turn_id, left_open[0]) and part["status"] == "sent"
                   and part["message_id"] == answer.reply_to
                   for part in self._outbox.turn_messages(answer.platform, running.turn_id)):
                running.held_answer = WorkItem("message", answer.text, turn_id, answer)
                running.held_for, running.held_home = left_open[0], home
                return running.turn_id
        return None

    def _open_before(self, session: GatewaySession, running: RunningTurn,
                     first: int) -> tuple[int, str, float] | None:
        """``(number, words, since)`` of the question earlier runs of the turn left open in the chat (`_unanswered`),
        ``first`` or a later one, which this run has not asked again yet; None for none. Not always the next it
        asks: a run asked a question and, answered, a second, and the run again asks the first again before the
        second. Found afresh until this run hands an answer, not after: `Inbox.answered_since` counts this run's
        answers too, and then read the open question as answered."""
        if running.answered_by is None or running.run_id not in self._left_open:
            # Not kept past its run: that of a run that ended without asking again.
            live = {other.running.run_id for other in self._sessions if other.running is not None}
            for run_id in self._left_open.keys() - live:
                del self._left_open[run_id]
            numbers = set()
            for message in self._outbox.turn_messages(session.platform, running.turn_id):
                asked = question_part(message["key"], running.turn_id)
                if asked is not None and asked[0] != running.run_id:
                    numbers.add(int(asked[1]))
            found = None
            for number in sorted(n for n in numbers if n >= first):
                if (before := self._unanswered(session, running, number)) is not None:
                    found = (number, *before)
                    break
            self._left_open[running.run_id] = found
        return self._left_open[running.run_id]

    def _unanswered(self, session: GatewaySession, running: RunningTurn, number: int) -> tuple[str, float] | None:
        """The words of question ``number`` (`words`) as the last earlier run of the turn (before a restart)
        sent it to the chat, every part of it, while nothing answered it and its wait did not run out, and
        since when the chat has had it: when the first of the runs before that asked it so, word for word,
        one after another, nothing answered since; else None."""
        prefix, journaled, expired = f"{running.turn_id}:ask:", {}, set()
        for message in self._outbox.turn_messages(session.platform, running.turn_id):
            if not message["key"].startswith(prefix):
                continue
            run, _, rest = message["key"][len(prefix):].partition(":")
            if run == running.run_id:
                continue
            of, _, part = rest.partition(":")
            if rest == f"{number}:expired:0":
                expired.add(run)
            elif of == str(number) and part.partition("/")[0].isdigit() and message["kind"] == "reply":
                # In the turn's order: its parts, and the pieces of one the platform refused as too long.
                journaled.setdefault(run, []).append(message)
        asked = []
        for run, parts in journaled.items():
            # Still to be sent, a part may have gone out before the restart (its answer lost), or is going
            # out now: it is in the chat, or will be, ahead of the question asked again. A question the
            # platform's limit split is in the chat once all of it may be: its choices come last.
            if all(m["status"] == "sent" or m["status"] == "pending" and self._outbox.maybe_seen(m["key"])
                   for m in parts):
                asked.append((parts[0]["created_at"], run, words(" ".join(m["text"] for m in parts))))
        found = None
        for created_at, run, text in sorted(asked, reverse=True):
            # An answer comes once the question is journaled: whatever the turn was handed since answered it.
            if (found is not None and text != found[0]) or run in expired \
                    or self._inbox.answered_since(session.platform, running.turn_id, created_at):
                break
            found = (text, created_at)
        return found

    def _drop_unseen(self, session: GatewaySession, running: RunningTurn, number: int) -> None:
        """Drop what earlier runs of the turn (before a restart) journaled of question ``number`` and
        the chat cannot have yet: left pending by a process that died before it was tried, or refused
        since the start (a 429). As a stop drops it (`ask`): sent now, it would ask, ahead of the question
        asked again, for an answer nothing takes until that one may be in the chat too."""
        def unseen(row: OutboxRow) -> bool:
            asked = question_part(row.key, running.turn_id)
            return (asked is not None and asked[0] != running.run_id and asked[1] == str(number)
                    and not self._outbox.maybe_seen(row.key))

        self._outbox.drop(*session.chat, unseen)

    def drop_left_unsent(self, pending: Iterable[OutboxRow], turn_ids: Collection[str]) -> int:
        """At a start, before the outbox sends anything: drop the question parts of the turns ``turn_ids``,
        which run again, that runs before the start journaled and the chat cannot have (`never_out`);
        ``pending``: the outbox's pending parts. Returns how many. Sent now, such a question would ask for
        an answer nothing waits for when the turn run again does not ask it (a model may decide otherwise
        the second time), as one a stop left would (`ask` drops that); if it asks, it asks anew."""
        chats: dict[tuple[str, str, str | None], set[int]] = {}
        for row in pending:
            if row.turn_id in turn_ids and question_part(row.key, row.turn_id) is not None and never_out(row):
                chats.setdefault(row.chat, set()).add(row.id)
        dropped = sum(self._outbox.drop(*chat, lambda row, ids=ids: row.id in ids) for chat, ids in chats.items())
        if dropped:
            log.info("dropped %d part(s) of questions asked before the restart that never went out: their turns"
                     " run again", dropped)
        return dropped

    def waits(self, running: RunningTurn | None) -> bool:
        """Whether the running turn waits on a question that may be in the chat."""
        question = running.question if running is not None and not running.suppressed else None
        if question is None or question.done():
            return False
        return running.question_key is None or self._outbox.maybe_seen(running.question_key)

    def hand_answer(self, running: RunningTurn | None, answer: Inbound) -> bool:
        """Hand the text message ``answer`` to the question the running turn waits on; False when it
        waits on none, on one that cannot be in the chat yet, ``answer`` was sent before the question
        was asked (its user could not have meant it for the question), or replies to another message
        (`replies_elsewhere`)."""
        if not self.waits(running) or self._inbox.sent_before(answer, self._asked_at(running)):
            return False
        # The question waiting is the turn's last asked: its questions are asked one at a time (`ask`).
        if self.replies_elsewhere(running, running.asked - 1, answer):
            return False
        self._hand(running, answer)
        return True

    def hand_across_threads(self, answer: Inbound) -> str | None:
        """Hand the text message ``answer`` to the question of another thread of its chat (another topic of a
        Telegram forum) that it replies to, from that thread (Telegram's reply in another topic): the id of
        the turn that asked, or None. Only a reply to the question's own message, by the member whose message
        the turn answers: it took a reply across topics to another message (an earlier answer) for the answer
        (Carol's aside became Bob's deploy target), and another member's reply there is their own request, in
        the topic they wrote it in. As in the question's thread, not one sent before the question was asked."""
        if answer.is_private or answer.reply_to is None or answer.attachments:
            return None
        for session in self._sessions:
            running = session.running
            if session.chat[:2] != (answer.platform, answer.chat_id) or session.chat[2] == answer.thread_id \
                    or running is None or running.suppressed or running.event is None \
                    or running.event.user_id != answer.user_id or not self.waits(running) \
                    or self._inbox.sent_before(answer, self._asked_at(running)):
                continue
            number = running.asked - 1
            if any(of_question(part["key"], running.turn_id, number) and part["status"] == "sent"
                   and part["message_id"] == answer.reply_to
                   for part in self._outbox.turn_messages(answer.platform, running.turn_id)):
                self._hand(running, answer)
                return running.turn_id
        return None

    def _hand(self, running: RunningTurn, answer: Inbound) -> None:
        running.answered_by = answer
        running.question.set_result(answer.text)
        self._handed[(answer.platform, answer.event_id)] = running.turn_id

    def replies_elsewhere(self, running: RunningTurn, number: int, message: Inbound) -> bool:
        """Whether ``message``, written in a group, replies to another message than question ``number`` of the
        turn ``running`` (any of its parts, as any run of the turn asked it): an earlier answer of the bot's,
        another member's message. Its member wrote about that, not the question (Telegram and a Discord channel
        hear both as addressed to the bot): a request of its own, handled as any message while a turn runs.
        Not one replying to the message the turn answers, which the question quotes: it is about what the question
        asks. Nor while a part of the question may be in the chat with its id unknown yet (its send's answer lost):
        a reply to it answers."""
        if message.is_private or message.reply_to is None or message.reply_to == running.answers:
            return False
        ids = set()
        for part in self._outbox.turn_messages(message.platform, running.turn_id):
            if not of_question(part["key"], running.turn_id, number):
                continue
            if part["status"] == "sent":
                ids.add(part["message_id"])
            elif self._outbox.maybe_seen(part["key"]):
                return False
        return message.reply_to not in ids

    def _asked_at(self, running: RunningTurn) -> float:
        """When the question ``running`` waits on was asked, on the wall clock as it reads now: one stepped back
        since (NTP setting right a clock that ran fast) moves it back as far, else every answer (received, or
        dated by the platform, before the clock's old reading) was taken for one written before the question, and
        it expired unanswered. A suspend moves nothing: the wall clock runs on while the monotonic one stands."""
        assert running.asked_at is not None and running.asked_awake is not None
        return min(running.asked_at, self._clock.time() - (self._clock.monotonic() - running.asked_awake))

    def handed(self, answer: Inbound) -> str | None:
        """The id of the turn ``answer`` was handed to (`hand_answer`), while its event is not `settled`: the
        store refused to settle it (a full disk), and the event is handled again. Its question has its answer
        and waits no more: handled as any message, the answer ran again as a turn of its own (the model paid
        twice, the chat answered twice)."""
        return self._handed.get((answer.platform, answer.event_id))

    def settled(self, answer: Inbound) -> None:
        """The event of ``answer``, handed to a question, is settled (into the turn that took it)."""
        self._handed.pop((answer.platform, answer.event_id), None)
