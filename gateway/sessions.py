"""What a gateway session is: one per (platform, chat, thread), with its own work queue.

These are plain records. `gateway.session_registry.SessionRegistry` is the only code
that creates, replaces or forgets them; `gateway.turn_runner.TurnRunner` is the only
code that runs their turns. A session runs one turn at a time: user messages and
background results wait in its queue, so a completion never splices into a running
turn — it runs as its own internal turn once the session is idle.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from agent import AgentSession, new_id
from platforms.base import Inbound

Mode = Literal["inline", "background"]
HEARD = 50
"""Messages a session remembers taking (`GatewaySession.heard`): far more than a catch-up hands over
ahead of a command sent before them."""


class Heard(NamedTuple):
    """What a session keeps of a message it took: enough to tell which was sent first
    (`gateway.app.Gateway._sent_before`), not the message, which a session would otherwise hold
    fifty of, their text and attachments included, for as long as it stays in memory."""

    platform: str
    event_id: str
    sent_at: float | None

    @classmethod
    def of(cls, inbound: Inbound) -> Heard:
        return cls(inbound.platform, inbound.event_id, inbound.sent_at)
ChatKey = tuple[str, str, str | None]
"""(platform, chat_id, thread_id): where a session's messages go."""


def quote_of(event: Inbound | None) -> str | None:
    """The message an answer to ``event`` quotes (`platforms.base.Outbound.reply_to`): in a group,
    channel or thread, where several members ask, the answer shows whose question it answers; in a
    private chat (the web chat, the terminal and webhooks are private) quoting would be noise."""
    return None if event is None or event.is_private else event.message_id


_ARRIVALS = itertools.count(1)


def arrived() -> int:
    """The next `WorkItem.arrival`: one order for all the items of the process, however made."""
    return next(_ARRIVALS)


@dataclass(slots=True)
class WorkItem:
    kind: Literal["message", "completion"]
    text: str
    turn_id: str
    event: Inbound | None = None
    """The inbound event this turn answers; settled in the inbox once the reply is queued."""
    delegation_id: str | None = None
    """For a completion turn: the background delegation whose results it delivers."""
    notes: tuple[str, ...] = ()
    """Lines sent after the turn's reply whatever the model says (failed subagents)."""
    quote: str | None = None
    """For a completion turn: the message its answer quotes, the one that asked for the delegation
    (`quote_of`). A message's turn quotes its event."""
    after_held: int | None = None
    """For a completion turn queued while the chat's messages were held in the store, or a message steered into
    a turn then: the number of the last one held before it came (`SessionRegistry._holds`), which it runs after (a
    message held for a question and put back then: the last one held by then). Read back, the held messages go
    where they came by `arrival`; this only has the store read when the queue is full."""
    arrival: int = field(default_factory=arrived)
    """When the registry took it, queued or steered (`SessionRegistry.enqueue`, `steer`), else when it was made (a
    message held for a question a replay may ask again, `RunningTurn.held_answer`): one steered into a turn that
    ends before reading it goes back into the queue behind what came before it (another group member's message),
    not ahead of it."""
    put_back: bool = False
    """A message held for the question of another thread's turn (`RunningTurn.held_home`) that the turn did not
    take: queued where it came by its ``arrival`` (`SessionRegistry.enqueue`), not behind what came after it."""


@dataclass(slots=True)
class RunningTurn:
    turn_id: str
    kind: str
    suppressed_by: str | None = None
    """Why nothing more from this turn reaches the chat: ``stop`` (/stop), ``new`` (/new) or
    ``superseded`` (an interrupting follow-up); None while it may still answer."""
    stop_note: str | None = None
    """In a group, what the member whose message the turn answers is told of another member's /stop or /new
    that stopped it (`gateway.replies.stopped_by_member`): else their question went unanswered without a
    word. None for a stop of their own, whose answer they read."""
    shutdown: bool = False
    """Interrupted because the gateway is stopping: it runs again, whole, after the next start."""
    current_tool: str | None = None
    started_at: float = 0.0
    """Clock time the turn began (epoch seconds)."""
    started_awake: float = 0.0
    """The monotonic clock's time as the turn began (`gateway.app.Gateway._began_at`)."""
    run_id: str = field(default_factory=lambda: new_id("r-"))
    """This run of the turn: a turn replayed after a restart runs again under the same turn id."""
    replay: bool = False
    """An earlier run of the turn may have begun (before a restart, or before its event was handed
    back): only then may the chat have seen a question it asked (`gateway.questions`)."""
    quiet: bool = False
    """This run shows nothing in the chat, which saw an earlier run end the turn (`gateway.owed_ends.answered_before`).
    No message is steered into it, nor interrupts it: it is a request of its own, answered after it. Steered in, its
    answer was lost (the turn's reply is the earlier run's); interrupting, it turned the card of the turn the chat
    saw end to "Stopped", and cut short what the run rebuilds (a delegation that answer promised)."""
    steered: list[WorkItem] = field(default_factory=list)
    """Messages steered into this turn: their events are settled when it ends, or they are queued
    as the next turns if it ended before reading them, each under the turn id it was accepted with
    (the one a restart replays it under, so what it sends is keyed alike both times)."""
    event: Inbound | None = None
    """The inbound event this turn answers (None for a completion turn)."""
    delegation_id: str | None = None
    """For a completion turn: the background delegation whose results it delivers."""
    question: asyncio.Future[str] | None = None
    """Set while the model waits for the chat's answer to a question (`gateway.questions`)."""
    question_key: str | None = None
    """The outbox key of that question's first part: no answer comes before it may be in the chat.
    None while one waits that is in the chat already (an earlier run, before a restart, asked it word
    for word)."""
    asked_at: float | None = None
    """Clock time that question was first asked (journaled; asked again word for word after a restart,
    by the earlier run): a message sent before it is not its answer (`gateway.store.inbox.Inbox.sent_before`)."""
    asked_awake: float | None = None
    """The monotonic clock's time as this process began to wait for that answer (`Questions._asked_at`)."""
    answered_by: Inbound | None = None
    """The message that answered the question last: in a group, the model reads who it came from."""
    asked: int = 0
    """Questions this run has asked (their keys count them)."""
    held_answer: WorkItem | None = None
    """A message that came, in a turn run again after a restart, before the turn asked again the
    question an earlier run had asked (number ``held_for``): its answer if the turn asks it again
    word for word, else a message of its own, queued when the turn ends where it came (as an unread steer)."""
    held_for: int = 0
    held_home: Callable[[WorkItem], None] | None = None
    """For a ``held_answer`` written in another thread of the chat (a reply from another topic of a Telegram forum
    quoting the question): queues it, not taken, in that thread's session, where it came. Put back in this turn's
    session, it was answered in the question's topic, not the one its member wrote in."""
    sent: int = 0
    """``send_message`` calls this run has made (their keys count them: a run again after a
    restart sends none twice); taken as a call begins, so calls split at once get keys of their own."""
    said: int = 0
    """Of those, the messages journaled: a call the journal refused said nothing."""
    files: int = 0
    """Files this run has sent with ``send_file`` (their keys count them, as ``sent`` does)."""
    replying: bool = False
    """Its reply is decided and being journaled (split in a worker thread first): it has ended for
    a stop, which comes after the reply, as one did when the reply was journaled at once."""
    noted: int = 0
    """Notes this run has added with the memory tool (their keys count them: a run again after
    a restart keeps none twice)."""
    quote: str | None = None
    """The user's message the turn's first message to the chat quotes (`WorkItem.quote`), until taken."""
    answers: str | None = None
    """The user's message the turn answers (what ``quote`` was before it was taken): the notes about
    the turn (its question given up on, a stop it did not ask for) quote it, wherever they come."""

    @property
    def suppressed(self) -> bool:
        return self.suppressed_by is not None

    @property
    def runs_again(self) -> bool:
        """Interrupted by the shutdown before anything else ended it: not a stop, which settled its
        event, nor its reply being journaled, after which it settles its messages. Its event stays
        unsettled, so it runs again, whole, after the next start: it sends and stores nothing now."""
        return self.shutdown and not self.suppressed and not self.replying

    def take_quote(self) -> str | None:
        """The message to quote, for the turn's first message of its answer (a note, a question, an
        interim text or the reply), None for the rest: in a group where several members ask, the
        answer to each shows whose question it answers, and its later parts follow on."""
        quote, self.quote = self.quote, None
        return quote

    def give_back_quote(self, quote: str | None) -> None:
        """A message that took the quote (`take_quote`) was not sent (the store or the platform refused it): the
        turn's next message quotes instead, unless one took another since. Kept by the refused one, the answer
        went out unquoted, nobody's in a group."""
        if self.quote is None:
            self.quote = quote


@dataclass(eq=False)
class GatewaySession:
    key: str
    platform: str
    chat_id: str
    thread_id: str | None
    session_id: str
    """The agent session id of the current generation (children name it as their parent)."""
    generation: int
    mode: Mode
    agent: AgentSession
    queue: deque[WorkItem] = field(default_factory=deque)
    held: int = 0
    """Messages waiting for a turn after those in ``queue``, held in the store (`SessionRegistry.enqueue`)."""
    running: RunningTurn | None = None
    generation_started_at: float = 0.0
    last_active: float = 0.0
    """Clock time of the last message or finished turn: idle sessions leave memory."""
    saved: tuple[list[dict], int, int] | None = None
    """The agent's messages list, how many of them are stored, and its `history_version` then.
    None: unknown, store them all."""
    backend: str = "default"
    """The delegation backend this generation delegates through (``/delegation``)."""
    backend_choice: str | None = None
    """The backend the chat chose for its next generations; None: ``delegation.backend``."""
    heard: list[Heard] = field(default_factory=list)
    """The messages this generation's latest turns began with or read (steered), oldest first, at most
    `HEARD`, while it is in memory: a ``/new`` handed over late resets no session that took a message
    sent after it. A list, not a bounded deque: an empty deque is ten times an empty list's size, and
    the gateway holds thousands of idle sessions."""
    owed: list[OwedEnd] = field(default_factory=list)
    """The ends of its turns that the store refused to record (a full disk), oldest first, until they
    are paid (`gateway.owed_ends`, which alone changes this list). The session stays in memory
    meanwhile: reloaded, it would forget them, and their answers would wait for a restart."""

    def took(self, inbound: Inbound) -> None:
        """Remember that a turn began with ``inbound`` or read it (`heard`)."""
        self.heard.append(Heard.of(inbound))
        if len(self.heard) > HEARD:
            del self.heard[0]

    @property
    def chat(self) -> ChatKey:
        return (self.platform, self.chat_id, self.thread_id)

    @property
    def busy(self) -> bool:
        """A turn runs or waits."""
        return self.running is not None or bool(self.queue) or self.held > 0

    def unsaved_from(self) -> int:
        """Where the agent's messages start to differ from those stored: the stored count after
        turns that only appended, 0 after anything else (compaction, /new, a reload)."""
        saved, agent = self.saved, self.agent
        if saved is not None and saved[0] is agent.messages and saved[2] == agent.history_version:
            return min(saved[1], len(agent.messages))
        return 0

    def mark_saved(self) -> None:
        self.saved = (self.agent.messages, len(self.agent.messages), self.agent.history_version)


def new_turn_id() -> str:
    return new_id("t-")


@dataclass(frozen=True, slots=True)
class EndMessage:
    """The message a turn's end sends: its reply, or the note of a stop, keyed by the turn."""

    text: str
    kind: str
    key: str
    turn_id: str
    reply_to: str | None
    """The user's message it quotes (`RunningTurn.take_quote`, taken when the turn first tried)."""
    note: bool = False
    """A stop's note rather than a reply (for the log)."""
    sends: bool = False
    """No text: the turn's sends were its answer, recorded as such under ``key`` (`Outbox.mark_answered_by_sends`),
    nothing sent."""


@dataclass(slots=True)
class OwedEnd:
    """What a turn's end still has to record, in the order it does it."""

    turn_id: str
    message: EndMessage | None
    """Its reply or note; None once journaled (the outbox keeps it, whatever is refused after)."""
    outcome: tuple[str, str, str | None] | None
    """A completion turn's ``(delegation_id, status, reason)`` (`turn_runner.CompletionEnded`);
    None once recorded, or for a message's turn."""
    events: tuple[Inbound, ...]
    """What it answers: its message and those steered into it that it read. Settled last."""
