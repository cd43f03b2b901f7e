"""The adapter protocol: what every platform adapter gives the gateway and takes from it.

Adapters translate at their edges only: a platform event becomes an `Inbound`, an
`Outbound` becomes one platform message. Outbound text is the agent's Markdown; an
adapter renders it in its platform's markup when it sends it (`platforms.formatting`)
and measures it the same way. Splitting to the text limit, retries,
pacing, dedup and access control are the gateway's; an adapter reports what the
platform said through the errors below, translated once, in one place. The messages
themselves (`Inbound`, `Outbound`, `Attachment`, `OutboundFile`, `Sent`) are in
`platforms.messages`, re-exported here.

    DeliveryError                 a send/edit/typing call failed
    ├── RateLimited               429: ``retry_after`` seconds
    ├── MessageTooLong            the platform refused the length
    ├── Forbidden                 blocked by the user, not in the channel, missing permissions
    ├── Unauthorized              the platform refused the bot's own credentials (a revoked token)
    ├── NotFound                  unknown chat, or the message to edit is gone
    ├── EditUnsupported           this platform or message cannot be edited
    ├── NetworkError              connection dropped, 5xx: worth retrying
    ├── BadRequest                anything else the platform rejected: not worth retrying
    ├── AttachmentTooLarge        a file over the size cap: ``size`` and ``limit`` in bytes
    └── Closed                    the platform takes nothing more from this process (the
                                  terminal's output went away): kept for the next start

Optional features are small protocols of their own, checked with ``isinstance``:
`ThreadMemory` (answers in threads without a new mention, e.g. Slack), `HearsRefusals` (is told of the
messages the gateway refused: Slack, whose mention put the bot in a thread; Discord, answered privately), `TurnReading`
(serves a turn's messages back to a caller, e.g. the webhook platform's GET), `NamesOrigins` (names in each
message the request it answers: the webhook platform),
`Deleting` (can delete a message it sent), `HistoryReading` (shows a chat's past messages, read back
from the gateway's durable store, e.g. the web chat page), `Streaming` (holds
HTTP responses open that the server must end before it stops), `OwnCommands`
(serves commands of its own), `SupportsDownload` (fetches a user's file, an
`Attachment`, through the platform's API, refusing anything over its
``max_attachment_bytes``), `SendsFiles` (uploads a file the agent sends, an
`OutboundFile`, up to its ``upload_limit``), `MovesChats` (keeps a chat whose platform gave it a new
id under the id it had, e.g. a Telegram group upgraded to a supergroup) and `CatchesUp` (reads at
start what was said while the gateway was down: Discord, Slack), `HearsEdits` (is told of a user's edit
to their message: Telegram, Slack, Discord), `HearsDeletions` (is told a user deleted their message: Slack, Discord),
`LosesChats` (is told the bot can no longer write to a chat:
removed from it, blocked by its user, the channel archived or deleted: Telegram, Slack, Discord), `StopsWithin` (a stop whose waits are
held to what is left of the gateway's grace, and whose client for sending is closed apart, once the
gateway's outbox is flushed: Discord, Slack, Telegram, webhooks). An adapter that
holds a connection to its platform reports its state: `platforms.connection.Connects`. One
that wants a minimum interval between calls per chat is `platforms.pacing.Paced` (with
`WritesAside` / `WaitsAside` its own writes, such as Slack's placeholder, count in that
pacing and wait for it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from platforms.messages import DEFAULT_MAX_ATTACHMENT_BYTES as DEFAULT_MAX_ATTACHMENT_BYTES
from platforms.messages import Attachment as Attachment
from platforms.messages import AttachmentKind as AttachmentKind
from platforms.messages import Inbound as Inbound
from platforms.messages import Outbound as Outbound
from platforms.messages import OutboundFile as OutboundFile
from platforms.messages import OutboundKind as OutboundKind
from platforms.messages import Sent as Sent
from platforms.messages import has_surrogates as has_surrogates
from platforms.messages import scalar_text as scalar_text


@dataclass(frozen=True, slots=True)
class DisplayTier:
    """An adapter's built-in display defaults (the third step of display resolution)."""

    interim_assistant_messages: bool
    long_running_notifications: bool | Literal["generic"]
    messaging: bool
    """A chat platform people message like a person (Telegram, Slack, Discord): ``gateway_mode: auto``
    delegates inline there when interim messages are off."""
    progress: Literal["off", "card"] = "off"
    """``card``: a running turn shows one live progress card (``display.progress``)."""


class DeliveryError(Exception):
    """``method``: the platform call that failed; ``chat_id``: the chat it was for, if any;
    ``platform``: the adapter's name, so a failure far from the adapter (at start-up) can
    name the settings to fix."""

    def __init__(self, message: str, *, method: str | None = None, chat_id: str | None = None,
                 platform: str | None = None):
        super().__init__(message)
        self.method = method
        self.chat_id = chat_id
        self.platform = platform


class RateLimited(DeliveryError):
    """Wait ``retry_after`` seconds before calling again. ``called`` False: the adapter refused the call itself,
    without asking the platform, while a limit the platform set in an earlier answer still holds (Slack's
    workspace-wide limit on messages); waited out alike, but no answer of the platform's to count."""

    def __init__(self, message: str, *, retry_after: float, called: bool = True, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after = retry_after
        self.called = called


class MessageTooLong(DeliveryError): ...


class Forbidden(DeliveryError): ...


class Unauthorized(DeliveryError):
    """The platform refused the bot's own credentials, for every chat alike: the token was revoked,
    rotated or reset, the app uninstalled. Raised only for such answers, never for a refusal in one
    chat (`Forbidden`). Not final: once the credentials work again (a fixed token and a restart, or
    the platform taking the token again), the same call succeeds."""


class NotFound(DeliveryError): ...


class KeptElsewhere(NotFound):
    """A user's file the platform only links to, kept by another service (a Google Drive file shared on Slack): the
    platform has no copy to download, however often it is shared again; only an upload of the file itself would do."""


class EditUnsupported(DeliveryError): ...


class NetworkError(DeliveryError): ...


class BadRequest(DeliveryError): ...


class Closed(DeliveryError):
    """The platform can take nothing more from this process, in any chat: the terminal chat's output
    has no reader any more (``switchboard chat | head -1``). Neither a failure of the message nor
    worth retrying here: the outbox leaves the message, and every later one for the platform,
    pending for the next start, and calls the adapter no more. Raised only when nothing of the
    message reached the platform."""


class AttachmentTooLarge(DeliveryError):
    def __init__(self, message: str, *, size: int | None, limit: int, **kw: Any):
        super().__init__(message, **kw)
        self.size = size
        """Bytes of the file, when known (the platform said, or the download ran past the limit)."""
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Accepted:
    """What the gateway answers for an accepted inbound event (webhooks return it to the caller)."""

    turn_id: str | None
    """The turn the event starts or joins; None for commands and dropped duplicates."""
    session: str
    """The gateway session key (platform, chat, thread)."""
    duplicate: bool = False


InboundSink = Callable[[Inbound], Awaitable[Accepted | None]]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A chat command the gateway serves, for platforms that register them (setMyCommands, slash commands)."""

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    """Other names the gateway reads as this command (``reset`` for ``new``). Adapters that
    pick out ``!name`` text commands pick these out too; only ``name`` is registered."""


@runtime_checkable
class Adapter(Protocol):
    name: str
    """The platform name used in config (``telegram``, ``slack``, ``discord``, ``webhook``, ``local``, ``web``)."""
    tier: DisplayTier
    text_limit: int
    """Largest message the platform accepts, in the adapter's own `measure` units."""
    typing_interval: float
    """Seconds after which a typing indicator lapses; the gateway refreshes it a little sooner.
    0: the platform shows no progress at all, and the gateway calls neither `typing` nor `idle`.
    An adapter whose indicator cannot be cleared (only a lapse or the bot's next message ends it) says
    ``typing_lapses = True``: a typing request the platform took after the reply showed it under the
    answer, so a turn's reply waits for one on the wire (`gateway.turn_runner`). Without it, as where `idle`
    clears the indicator after the reply anyway (Slack's placeholder), the reply does not wait."""

    def measure(self, text: str) -> int:
        """Length of the Markdown ``text`` as the platform counts it once the adapter has rendered
        it (Telegram: UTF-16 code units of the text after entity parsing)."""

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Connect, register ``commands`` where the platform has them, and begin
        delivering events to ``sink``; returns once connected. Events are handed
        over one at a time per chat, in order; ``sink`` returns quickly (it only
        records and queues: a new event of a chat whose older events the start replays
        is queued after them without waiting for them, and an edit of it handed to
        `HearsEdits`' ``edited`` is applied at once). Hand events over from a task of the
        adapter's own, never awaited within ``start`` itself."""

    async def stop(self) -> None:
        """Stop receiving, close connections. Idempotent."""

    async def send(self, message: Outbound) -> Sent:
        """Send one part, rendered for the platform; raises a `DeliveryError` subclass on failure.
        A part whose formatting the platform refuses goes once more as plain text."""

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """Replace a sent message's text; "not modified" counts as success. Raises
        `EditUnsupported` where editing is impossible, so the gateway sends anew."""

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """Show a typing or progress indicator once; the gateway refreshes it a little sooner
        than every `typing_interval` seconds while a turn runs. May do nothing."""

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        """The chat's turn has ended and its last message was sent: clear any progress
        indicator so none is left behind stale. May do nothing."""

    def web_routes(self) -> Sequence[Any]:
        """aiohttp route definitions to mount on the gateway's HTTP server (webhook modes); may be empty."""


@dataclass(frozen=True, slots=True)
class TurnRead:
    """What the gateway has for one turn, for a caller that reads replies back."""

    messages: list[dict[str, Any]]
    """The turn's messages in order, then those of the background work it started: outbox rows,
    each with at least ``chat_id``, ``turn_id`` (the turn it belongs to), ``kind``, ``text`` and
    ``sequence``. A file the turn sent is a row with ``op`` ``file`` (its ``text`` the caption),
    its ``status`` and, once sent, its ``message_id``: the id `SendsFiles.send_file` returned."""
    complete: bool
    """True once nothing more will be added: the turn has ended and its background work has
    delivered its results (or an interruption report, or was stopped)."""


TurnReader = Callable[[str, str], Awaitable[TurnRead]]
"""``reader(route, turn_id)``: what the gateway has for that turn; LookupError for an unknown one."""


@runtime_checkable
class ThreadMemory(Protocol):
    """An adapter that answers in threads without being mentioned again (Slack, Discord)."""

    def remember_threads(self, threads: Iterable[tuple[str, str]]) -> None:
        """Before `Adapter.start`, the gateway hands over the ``(chat_id, thread_id)`` pairs of
        the thread sessions it has stored, most recently active last, so that after a restart
        those threads are still answered."""


@runtime_checkable
class HearsRefusals(Protocol):
    """An adapter told of the messages the gateway refuses before it answers them: Slack takes a thread to be the
    bot's from a message the gateway has not read yet (a mention), and a stranger's would put the bot in a thread
    no one it serves addressed it in; Discord answers a refused slash command to its user alone.

    Such an adapter may also define ``answers_privately(reply_token) -> bool``: whether an answer the gateway
    journals through that token now is for the command's user alone; it is journaled so (`Outbound.private`)."""

    def refused(self, inbound: Inbound) -> None:
        """The gateway refused ``inbound``, its sender not allowed (`gateway.access`), told so or not: a thread
        only their messages brought the bot into is not its, and a command's refusal is for its user only."""


@runtime_checkable
class KnowsUnchangeable(Protocol):
    """An adapter that knows, without asking its platform, some messages it will neither edit nor delete
    (Telegram: one left in a group since upgraded to a supergroup, or one whose id Telegram never said). The
    outbox sends their change anew at once: waiting the chat's pace for a call never made held what came next
    back a turn."""

    def unchangeable(self, chat_id: str, message_id: str) -> bool:
        """Whether `Adapter.edit` (and `Deleting.delete`) would raise `EditUnsupported` for the message
        without calling the platform."""


@runtime_checkable
class OperatorScreen(Protocol):
    """An adapter on the operator's own screen (the terminal chat), whose log goes elsewhere."""

    def show_start_problems(self, lines: Sequence[str]) -> None:
        """Called before `greet`, when the start went wrong in ways the log alone would hide
        (a plugin that did not load, whose commands would be ordinary messages): one line each, redacted,
        to show under the greeting."""

    def greet(self) -> None:
        """Show the greeting (and the start's problems), once: called before the outbox sends
        anything, so that a reply an earlier run left unshown comes after it, not above it."""


@runtime_checkable
class TurnReading(Protocol):
    """An adapter whose callers read a turn's messages back (the webhook platform's GET)."""

    def bind_turn_reader(self, reader: TurnReader) -> None:
        """Called once, before `Adapter.start`, with the gateway's reader of its outbox."""


TurnOrigin = Callable[[str], str | None]
"""``origin(turn_id)``: the turn of the request a message of ``turn_id`` answers: ``turn_id`` itself for a request's
own turn (a command's too), the request that asked for the work for the turn that delivers background results (or
reports on them, a ``/retry``'s included); None once the gateway no longer knows (a week after the work settled).
Runs synchronously: an indexed read or two."""


@runtime_checkable
class NamesOrigins(Protocol):
    """An adapter whose messages name the request they answer, so a caller matches a later delivery to
    what it asked (the webhook platform's ``origin_turn_id``)."""

    def bind_turn_origin(self, origin: TurnOrigin) -> None:
        """Called once, before `Adapter.start`, with the gateway's `TurnOrigin`."""


HistoryReader = Callable[[str, int], list[dict[str, Any]]]
"""``reader(chat_id, limit)``: the chat's last ``limit`` messages as its people saw them,
oldest first, from the gateway's durable store (see `HistoryReading`)."""


@runtime_checkable
class HistoryReading(Protocol):
    """An adapter that shows a chat's conversation again after a reload or a reconnect (the web chat)."""

    def bind_history_reader(self, reader: HistoryReader) -> None:
        """Called once, before `Adapter.start`, with the gateway's reader. The reader runs
        synchronously (a few indexed reads): no message is sent between its return and the
        caller's next statement, so a read followed by a subscription misses nothing.

        Each message is a dict: ``id`` (the platform message id `send` returned, or
        ``user:<event_id>`` for what a person sent), ``role`` (``user`` or ``assistant``),
        ``kind`` (``user`` or an `OutboundKind`), ``text`` (after every edit), ``time``
        (epoch seconds it was sent or received) and ``edited`` (bool). Deleted messages are
        left out. A file the adapter sent (`SendsFiles.send_file`) is a message whose id is the
        one that returned, whose ``text`` is the caption, with ``file`` true."""


@runtime_checkable
class Streaming(Protocol):
    """An adapter whose HTTP routes hold responses open (Server-Sent Events)."""

    async def close_streams(self) -> None:
        """End every open stream now: the HTTP server is stopping and waits for its handlers."""


@runtime_checkable
class Deleting(Protocol):
    """An adapter that can delete a message it sent."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        """Delete a sent message; one already gone counts as deleted. Raises `EditUnsupported`
        (or `Forbidden`) where the platform will not delete it, so the gateway edits instead."""


@runtime_checkable
class FindsSent(Protocol):
    """An adapter that can look up a message it sent for a part (Slack by the part's idempotency key,
    kept in the message's metadata; Discord by its nonce, among the posts its process heard, and a slash
    command's follow-up in its channel's history). Before sending a part again whose earlier attempt may have
    reached the platform unseen — a network error or a 5xx, or a process that died mid-send —
    the outbox asks, so the chat does not get the message twice.

    Such an adapter may also define ``findable(message) -> bool``: whether `find_sent` could ever
    find ``message`` (Slack: a post with its key, not a slash command's answer). The outbox sends one
    it could not without a lookup, and without waiting for a lookup's turn among the platform's
    (`platforms.pacing.Pacing.account_lookup_interval`). Without it every message is looked up: an
    adapter written before it never has a message posted twice for want of the method. One whose file
    sends `find_sent` cannot find says so with ``finds_files = False`` (Slack: a file share carries no
    key; its upload settles a lost answer itself, `platforms.slack_uploads`)."""

    async def find_sent(self, message: Outbound, since: float) -> str | None:
        """The platform's id of the message sent for ``message.idempotency_key`` at or after the
        epoch time ``since``, or None when there is none to be found (it is then sent). Raises
        `DeliveryError` when the platform cannot tell."""


IndicatorLeft = Callable[[str, str | None], None]
"""``left(chat_id, thread_id)``: an indicator the adapter could not remove (or is about to show) is in that
chat. The gateway's also has ``gone(chat_id, thread_id)``: none of this process's may be there any more, so
the next start need not look."""


@runtime_checkable
class LeavesIndicators(Protocol):
    """An adapter whose "working" indicator is a message of its own (Slack's placeholder): a
    process that dies mid-turn leaves it in the chat, so the next start clears it."""

    async def clear_left_behind(self, chat_id: str, thread_id: str | None) -> int:
        """Delete the indicators an earlier process left in this chat or thread, never one this
        process shows; returns how many. Never raises: a failure is logged (and told to
        ``left``, as for `bind_indicators_left`)."""

    def bind_indicators_left(self, left: IndicatorLeft) -> None:
        """Called once, before `Adapter.start`, with ``left``, which the adapter calls for each
        chat or thread where it could not remove an indicator (the platform refused the token):
        the gateway keeps it, durably, and the next start calls `clear_left_behind` there."""


@runtime_checkable
class StopsWithin(Protocol):
    """An adapter whose stop waits on its platform and its queue (Discord: its client's reconnect
    backoff, the events still queued; Slack: its placeholders' deletions; both: the `Not taken`
    answers to commands; Telegram and webhooks wait on nothing): the gateway's stop gives it what is
    left of the grace. Its stop comes in
    two steps: `stop_within` ends intake as the gateway's stop begins, `close` closes the client it
    sends with once the gateway has flushed its outbox, so the replies of the turns that end within
    the grace still go out. `Adapter.stop` does both."""

    async def stop_within(self, seconds: float) -> None:
        """End intake within about ``seconds``: no new event is taken (Socket Mode's WebSocket, Discord's
        gateway connection are closed); what it had no time to hand over is not lost (read back at the next
        start, or answered to be sent again). Its last calls to the platform (those answers, Slack's
        placeholder deletions and Socket Mode close) get what is left of ``seconds``, but at least
        `LAST_CALLS_FLOOR`, and all together no more than that floor past ``seconds`` (`last_calls_time`):
        what they do not do by then is left (see each adapter). Sending still works after it, until `close`.
        Idempotent."""

    async def close(self) -> None:
        """Close the client the adapter sends with (Slack's Web API, Discord's REST), after `stop_within`;
        called by the gateway's stop once its outbox is flushed and closed, whether `stop_within` succeeded
        or not. Waits on nothing of the platform's. Idempotent."""


LAST_CALLS_FLOOR = 1.0
"""Seconds an adapter's last calls at a stop get when ``seconds`` (`StopsWithin.stop_within`) is spent: they
take milliseconds while the platform answers; one that does not answer holds the stop this much longer, no
more, however many steps of them there are (`last_calls_time`; as the children's engine's last requests,
`gateway.app.CLOSE_FLOOR_SECONDS`)."""


def last_calls_time(deadline: float, now: float) -> float:
    """Seconds the last calls a stop begins at ``now`` get, its ``seconds`` ending at ``deadline`` (loop time):
    what is left of them, at least `LAST_CALLS_FLOOR`, but never past ``deadline + LAST_CALLS_FLOOR``. Whatever
    its earlier steps took, a stop whose steps each keep to it ends by then."""
    return max(min(max(deadline - now, LAST_CALLS_FLOOR), deadline + LAST_CALLS_FLOOR - now), 0.0)


@runtime_checkable
class OwnCommands(Protocol):
    """An adapter that serves commands of its own, outside the gateway (the terminal's /quit)."""

    own_commands: Sequence[CommandSpec]
    """Listed by /help on this platform, after the gateway's."""


SeenRecorder = Callable[[str, str], None]
"""``seen(conversation, position)``: the newest message handed over from that conversation (recorded
by the gateway, or not addressed to the bot), both in the platform's own terms; stored, not yet
durable when it returns; raises when it cannot be."""
SeenLookup = Callable[[str], str | None]
"""``stored(conversation)``: the position recorded for that conversation (by `SeenRecorder`, in this
process or an earlier one), or None; raises when the store cannot be read."""


@runtime_checkable
class CatchesUp(Protocol):
    """An adapter whose platform does not redeliver a message sent while the gateway was down
    (Discord never does; Slack gives up after a few minutes): at each start it asks the platform for
    what came after the last message seen in each conversation it talks in, and hands those over as
    if they had come live."""

    def bind_last_seen(self, last_seen: Mapping[str, str], seen: SeenRecorder, stored: SeenLookup) -> None:
        """Called once, before `Adapter.start`, with what earlier processes recorded (conversation ->
        position of the last message seen), ``seen``, which the adapter calls as it hands messages
        over, with a newer position than the one recorded for that conversation (or, where the
        platform does not order its events, an older one just before a message it did not take, for
        the next start to read it back), and ``stored``, which says what is recorded now for a
        conversation the adapter no longer holds in memory. An adapter may keep a few other positions there
        under keys no conversation has (Slack's and Telegram's ``edited:…``, the latest edit of a message),
        forgotten after the same month."""


AnswerLookup = Callable[[str], bool]
"""``sent(message_id)``: whether the platform's message ``message_id`` is one the outbox sent, in this process or an
earlier one (not a command's answer), while its row is kept (a week, `gateway.store.outbox_rows.RETENTION_SECONDS`);
raises when the store cannot be read."""


@runtime_checkable
class RemembersAnswers(Protocol):
    """An adapter to which a conversation opened on one of the bot's messages belongs (a Discord thread a member
    opens on its answer, which has the message's id): the ids it holds in memory are this process's only, so it asks
    the gateway's outbox of one it does not hold, sent before a restart."""

    def bind_answers(self, sent: AnswerLookup) -> None:
        """Called once, before `Adapter.start`, with ``sent``, which the adapter calls sparingly (a sync read of the
        state database, on the event loop): once per new conversation, not per message."""


ChatMoved = Callable[[str, str], Awaitable[None]]
"""``moved(old_chat_id, new_chat_id)``: stores that the chat the gateway knows as ``old_chat_id``
is ``new_chat_id`` on the platform now; returns once that is durable, raises when it cannot be."""


@runtime_checkable
class MovesChats(Protocol):
    """An adapter whose platform may give a chat a new id (Telegram, when a group becomes a
    supergroup). The gateway keeps knowing the chat by the id it had: the adapter hands over
    the events of the new chat under that id and sends there what the gateway addresses to
    it. So the chat's session, its history and what is under way in it stay as they are."""

    def bind_chat_moves(self, moves: Mapping[str, str], moved: ChatMoved) -> None:
        """Called once, before `Adapter.start`, with the moves stored so far (the gateway's chat
        id -> the chat's id on the platform) and ``moved``, which the adapter awaits for each
        move it learns before it hands over an event of the new chat or writes there."""


MessageEdited = Callable[[str, str, str | None, str, str], Awaitable[bool]]
"""``edited(platform, chat_id, thread_id, message_id, text)``: the user changed the text (or caption) of
their message ``message_id`` in that chat and thread (ids as the adapter put them in the message's
`Inbound`) to ``text``. A message still waiting for its turn is then answered as edited, after a restart
too; one whose turn has begun, or was answered, or that the gateway never took (or has forgotten), is
left as it is, and the edit starts nothing. Returns whether the edit was taken, once that is durable;
raises as `InboundSink` does when the store refuses it (the adapter hands it over again)."""


@runtime_checkable
class HearsEdits(Protocol):
    """An adapter whose platform tells it of users' edits to their messages (Telegram's ``edited_message``, Slack's
    ``message_changed``, Discord's ``MESSAGE_UPDATE``)."""

    def bind_edits(self, edited: MessageEdited) -> None:
        """Called once, before `Adapter.start`, with ``edited``, which the adapter awaits for each edit of a
        user's message, in the order of the chat's events, before it confirms the edit to its platform."""


MessageDeleted = Callable[[str, str, str | None, str], Awaitable[bool]]
"""``deleted(platform, chat_id, thread_id, message_id)``: the user deleted their message ``message_id`` in that chat
and thread (ids as the adapter put them in the message's `Inbound`). A message still waiting for its turn is then
dropped: never answered, nor replayed after a restart, and the chat is told nothing. One whose turn has begun, or was
answered, or that the gateway never took (or has forgotten), is left as it is. Returns whether it was dropped, once
that is durable; raises as `InboundSink` does when the store refuses it (the adapter hands it over again)."""


@runtime_checkable
class HearsDeletions(Protocol):
    """An adapter whose platform tells it of users' deletions of their messages (Slack's ``message_deleted``, Discord's
    ``MESSAGE_DELETE``)."""

    def bind_deletions(self, deleted: MessageDeleted) -> None:
        """Called once, before `Adapter.start`, with ``deleted``, which the adapter awaits for each deletion of a
        user's message, in the order of the chat's events, before it confirms the deletion to its platform."""


class ChatLost(Protocol):
    """``lost(chat_id, why)``: the bot can no longer write to the chat the gateway knows as ``chat_id`` (it was
    removed from it, its user blocked it, the chat was deleted); ``why`` says so in a few plain words that name no
    one ("the bot was blocked by the user"). The gateway stops what is under way there, in every thread of the chat,
    as ``/stop`` would, but says nothing in the chat, and drops the messages waiting there for their turns.
    ``lost(chat_id, why, thread_id=thread)``: the same for that thread of the chat alone (a Discord thread deleted,
    or a private one the bot was removed from): the chat's own session and its other threads' go on. Returns once
    that is done; raises as `InboundSink` does when the store refuses it (the adapter hands it over again). Nothing
    needs undoing when the bot may write there again: the chat's next message is answered as any."""

    async def __call__(self, chat_id: str, why: str, thread_id: str | None = None) -> None: ...


@runtime_checkable
class LosesChats(Protocol):
    """An adapter told when the bot can no longer write to a chat (Telegram's ``my_chat_member``, Slack's
    ``channel_left`` or ``channel_archive``, Discord's ``GUILD_DELETE``, ``THREAD_DELETE`` for one thread, or a write
    refused so when the event was missed): the chat's work (or the thread's), which nobody would read, stops instead
    of spending model calls on answers refused one by one."""

    def bind_chat_lost(self, lost: ChatLost) -> None:
        """Called once, before `Adapter.start`, with ``lost``, which the adapter awaits once for each chat (or
        thread, passing ``thread_id``) it learns it can no longer write to (again after it could meanwhile), in the
        order of the chat's events."""


@runtime_checkable
class SupportsDownload(Protocol):
    """An adapter that fetches the files users send."""

    max_attachment_bytes: int
    """Files larger than this are refused, before or during the download."""

    async def download(self, attachment: Attachment) -> bytes:
        """The file's bytes, through the platform's own API. Raises `AttachmentTooLarge` for a
        file over ``max_attachment_bytes`` (nothing beyond the limit is read), another
        `DeliveryError` when the platform refuses or cannot be reached."""


@runtime_checkable
class SendsFiles(Protocol):
    """An adapter that uploads files the agent sends (the ``send_file`` tool) into the chat.

    Such an adapter may also say ``sends_files_privately = True``: a file for a command's user alone
    (`Outbound.private`) goes to that user alone (Discord's ephemeral follow-up), so a long answer for them ends in
    ``answer.md`` (`gateway.long_messages`); without it, such an answer ends in a note, and such a file is refused."""

    caption_limit: int
    """Longest caption the platform takes with a file, in the adapter's `measure` units."""

    def upload_limit(self, chat_id: str) -> int:
        """Bytes the platform takes in one file for this chat (Discord's depends on the server)."""

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Upload ``file`` into the message's chat (and thread), with ``message.text`` as its
        caption (Markdown, rendered as `send` renders a part; empty: none). Raises a
        `DeliveryError` subclass as `send` does; `AttachmentTooLarge` when the platform refuses
        the file's size."""


@runtime_checkable
class CountsCharacters(Protocol):
    """An adapter whose `measure` is the text's length in characters (``len``): measuring renders
    nothing, so whether a text fits its ``text_limit`` is known at once (the outbox then splits
    it on the event loop instead of in a worker thread). Say so with ``counts_characters = True``."""

    counts_characters: bool


@runtime_checkable
class CapsSpans(Protocol):
    """An adapter whose platform reads at most ``max_spans`` formatted spans in one text or
    caption (Telegram: 100 entities), past which its `measure` is past every limit."""

    max_spans: int

    def spans(self, text: str) -> int:
        """The formatted spans (bold, italic, code, links...) the Markdown ``text`` renders to."""


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: what Telegram counts."""
    return len(text.encode("utf-16-le")) // 2
