"""Discord adapter on discord.py 2: DMs, mentions, replies, threads and slash commands.

Which messages are for the bot, and which session they belong to:

- **DM**: every message. ``chat_id`` = the DM channel, ``thread_id`` = None.
- **Guild channel**: messages that mention the bot (or the role Discord made for it, which
  its mention picker offers under the same name) or reply to one of its messages.
  ``chat_id`` = the channel, ``thread_id`` = None; replies go to the channel.
- **Thread**: the same, plus every message in a thread the bot owns or has posted
  in, or that a member opened on one of its answers. ``chat_id`` = the thread's parent channel, ``thread_id`` = the
  thread, so each thread is its own session (the gateway keys sessions by platform, chat, thread);
  replies go into the thread, or to its channel once a moderator locked it (`platforms.discord_locked`). A thread
  discord.py does not hold keeps that key (`_in_thread`).
- Text commands (``!stop``, ``!new``, ``!<any registered command or alias>``) are also heard
  without a mention in a channel where the bot has posted; they pass through as
  plain text for the gateway to route.

The bot's own messages and other bots' are ignored (two bots answering each other
would never stop); the bot's mention (or its role's) is stripped from the text. A member's edit of their
message (``MESSAGE_UPDATE``) is read as the message is, and goes to the gateway (`HearsEdits`) in its place
among the events: a message still waiting for its turn is answered as edited; any other edit changes nothing
and starts no turn, nor does one that leaves a message no longer for the bot. A deletion (``MESSAGE_DELETE``, each
message of a moderator's ``MESSAGE_DELETE_BULK``) goes so too (`HearsDeletions`, `platforms.discord_deletions`): a
message still waiting for its turn is not answered. The threads
the bot posted in are remembered across restarts: the gateway hands them over
(`remember_threads`). What was said to the bot while the gateway was down, which Discord never sends
again, is asked for at each new session (`platforms.discord_catch_up`): the last message seen in each
channel is kept in the gateway's store (`bind_last_seen`, `platforms.discord_seen`). A forward is heard as the message it forwards (Discord sends it empty,
with a snapshot of that message). Attached files arrive as `Attachment`s (`platforms.discord_files`);
`download` fetches one from its attachment URL, refusing files over ``max_attachment_bytes``. The bot removed from
a server (``GUILD_DELETE``, not an outage's), a channel deleted, or a write Discord refuses as the chat closed to the
bot (a missed event's) tells the gateway once that it can no longer write to the chat (`LosesChats`,
`platforms.discord_membership`): it stops the chat's work; a thread deleted, or a private one the bot was removed
from (unless it manages threads there), that thread's alone. Guild messages
carry text only with the privileged Message Content intent; a missing intent is
reported at start (application flags, close code 4014) naming the Developer
Portal switch.

Each `CommandSpec` becomes a slash command, deferred before it is handed over
(`platforms.discord_commands`) and answered through its interaction (`platforms.discord_interactions`).
The first answer replaces the "thinking…" response, later ones are follow-ups (after a restart Discord
is asked which comes next); an expired token, or one whose acknowledgement Discord refused, falls back to a channel
message. A refusal (`refused`) and the word that a command could not be handled go to the command's user alone:
"thinking…", which the channel sees, is deleted, and they follow as ephemeral messages (after a restart too:
`answers_privately`); with the token past its 15 minutes, or never acknowledged, such an answer is not posted at
all. Each part goes as the outbox journaled it, for all or for the user alone, in this process and after a restart.

Sending: the gateway hands over Markdown, rendered to Discord's own Markdown
(`platforms.formatting.discord_markdown`: tables become code blocks, what Discord
would misread is escaped); `measure` counts the rendered content against Discord's
2,000 characters. Discord never refuses a message for its markup, so there is no
plain-text fallback to make. Sends carry a nonce derived from `Outbound.idempotency_key` with
``enforce_nonce``, so Discord drops a repeated send of the same part within a few minutes; one whose
post this process heard is looked for first (`find_sent`, `platforms.discord_sent`), as is a command's
follow-up, in its channel's history. discord.py itself retries 429s (up to 30 s; longer waits raise
`RateLimited`) and 5xx, but for follow-ups, which carry no nonce; answers to slash
commands go through a session of their own that holds them to the same cap, and a command's
"thinking…" response waits no longer than Discord's 3 seconds for it (`platforms.discord_answers`), nor
a few seconds for Discord's answer (`discord_commands.ACKNOWLEDGE_TIMEOUT`): refused, the command is
handed over without its interaction and answered in the channel; given up on (past that time, or at a stop),
it keeps its interaction, which Discord may have taken, and is asked at the first answer.
Every SDK error is translated in `platforms.discord_errors`, the one place that does so, and logged there
(at DEBUG where the gateway says what became of the call: a part, an edit, a deletion).

Files the agent sends go as a message with the file attached (``files[0]``), the caption as its
content, with the same nonce, so a repeated upload is dropped too (within those minutes: the outbox
looks up no file); at most the guild's upload limit as discord.py knows it from the guild's boost
level (10 MiB without boosts, and in DMs). A file for a command's user alone (the ``answer.md`` of a long private
answer) goes through the interaction as an ephemeral follow-up, as the answer's parts do, and nowhere once the
interaction's token is gone.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from platforms import discord_urls  # first: imports discord.py without its audioop warning
from platforms import (
    discord_answers,
    discord_catch_up,
    discord_commands,
    discord_deletions,
    discord_edits,
    discord_files,
    discord_inbound,
    discord_locked,
    discord_opened,
    discord_posts,
    discord_sent,
    discord_token,
)
from platforms.base import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    LAST_CALLS_FLOOR,
    AnswerLookup,
    Attachment,
    BadRequest,
    ChatLost,
    CommandSpec,
    DisplayTier,
    Forbidden,
    Inbound,
    InboundSink,
    MessageDeleted,
    MessageEdited,
    NetworkError,
    NotFound,
    Outbound,
    OutboundFile,
    SeenLookup,
    SeenRecorder,
    Sent,
    last_calls_time,
    scalar_text,
)
from platforms.connection import ConnectionState, ConnectionWatch
from platforms.discord_calls import CALL_TIMEOUT
from platforms.discord_connection import DiscordStartError as DiscordStartError  # what `start` raises
from platforms.discord_connection import (
    LOGIN_ERRORS,
    LOGIN_TIMEOUT,
    disconnect,
    end_dispatching,
    login_failed,
    new_client,
    wait_connected,
)
from platforms.discord_deletions import Deletion
from platforms.discord_errors import PORTAL_HINT, described, ended_because
from platforms.discord_handover import by_either_key, until_recorded
from platforms.discord_interactions import UNACKNOWLEDGED, Interactions
from platforms.discord_membership import THREAD_DELETED, THREAD_LEFT, Access, Membership, kept_out
from platforms.discord_opened import Unsure
from platforms.discord_seen import REMEMBERED_CHANNELS, LastSeen
from platforms.discord_twins import Twins, nonce_of
from platforms.discord_typing import TYPING as TYPING  # the typing route, where it always was
from platforms.discord_typing import Typing
from platforms.discord_unquoted import RefusedReplies
from platforms.discord_unrecorded import Edit, Item, Unrecorded
from platforms.formatting import discord_markdown
from platforms.not_recorded import Handing
from platforms.pacing import Pacing
from platforms.proxies import proxy_refusal
from platforms.recent import remember
from platforms.rereads import LOOP_TIMER, Timer

import discord  # noqa: E402  (after discord_urls, see above)

log = logging.getLogger(__name__)

PACING = Pacing(edit_interval=1.0)

ClientFactory = Callable[..., discord.Client]
"""Builds the client from discord.Client's keyword options (``intents``, ``max_ratelimit_timeout``)."""

DRAIN_SECONDS = 5.0
"""How long a stop not given its time by the gateway (`DiscordAdapter.stop`) hands over the events queued."""

THREAD_LOOKUP_TIMEOUT = 5.0
"""How long Discord is given to say which thread a message's channel is (`DiscordAdapter._in_thread`): every chat's
events wait behind that one call, which a slow Discord (or its 5xx and 429 that discord.py retries) would stretch to
the 30 s of `CALL_TIMEOUT` and more."""

REMEMBERED_COMMANDS = 1000
"""Slash commands whose interaction ids are kept to drop a repeat: a RESUME replays only what a reconnect missed."""


class DiscordAdapter:
    name = "discord"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=True,
                       progress="card")
    text_limit = 2000
    caption_limit = text_limit
    """A file's caption is the message's content."""
    sends_files_privately = True
    """A file for a command's user alone goes as an ephemeral follow-up (`send_file`)."""
    typing_interval = 8.0
    """Discord's indicator lasts about 10 s."""
    typing_lapses = True

    def __init__(
        self,
        token: str,
        *,
        api_base: str = discord_urls.DEFAULT_API_BASE,
        gateway_url: str | None = None,
        command_guilds: Sequence[int] = (),
        client_factory: ClientFactory | None = None,
        ready_timeout: float = 30.0,
        login_timeout: float = LOGIN_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        catch_up_timeout: float = discord_catch_up.DEADLINE,
        catch_up_timer: Timer = LOOP_TIMER,
        max_retry_after: float = discord_catch_up.MAX_RETRY_AFTER,
        acknowledge_timeout: float = discord_commands.ACKNOWLEDGE_TIMEOUT,
        interaction_window: float = discord_answers.INTERACTION_WINDOW,
        thread_lookup_timeout: float = THREAD_LOOKUP_TIMEOUT,
    ) -> None:
        """``gateway_url`` None asks the REST API (``GET /gateway/bot``). ``client_factory``
        is the test seam (default `discord.Client`); ``login_timeout`` bounds the login at start (`LOGIN_TIMEOUT`),
        ``ready_timeout`` the wait for READY after it, ``call_timeout`` each REST call (`platforms.discord_calls`,
        an upload more by its size); ``clock`` (epoch seconds) ages the messages
        caught up at start until Discord's first answer tells its time (`discord_catch_up.DiscordTime`), the
        catch-up being given up after ``catch_up_timeout`` seconds, and the channels remembered as refusing
        replies (`platforms.discord_unquoted`); ``monotonic`` times the waits for the state database
        (`discord_opened.Answers`), which NTP stepping ``clock`` must not cut short; ``catch_up_timer`` is
        the time its waits before reading a channel again take (`platforms.rereads`), a 429's ``retry_after``
        holding such a read ``max_retry_after`` seconds at most (``delivery.max_retry_after``);
        ``acknowledge_timeout`` is how long a command's "thinking…" call is given (`discord_commands.received`),
        ``interaction_window`` how long after the command Discord may still take one given up on
        (`discord_interactions.Interactions.unsure`), ``thread_lookup_timeout`` how long Discord is given to name a
        message's thread (`THREAD_LOOKUP_TIMEOUT`).
        Only one api_base per process: see `platforms.discord_urls`."""
        self._token = token
        self._api_base = api_base
        self._gateway_url = gateway_url
        self._command_guilds = tuple(int(g) for g in command_guilds)
        self._client_factory = client_factory or discord.Client
        self._ready_timeout, self._login_timeout, self._call_timeout = ready_timeout, login_timeout, call_timeout
        self.max_attachment_bytes = max_attachment_bytes
        self._client: discord.Client | None = None
        self._typing = Typing(self._channel)
        self._interactions = Interactions(self._require_client, window=interaction_window)
        self._urls: discord_urls.UrlOverride | None = None
        self._connect_task: asyncio.Task[None] | None = None
        self._consumer: asyncio.Task[None] | None = None
        self._clock = clock
        self._discord_time = discord_catch_up.DiscordTime(clock)
        self._catch_up_timeout = catch_up_timeout
        self._catch_up_timer = catch_up_timer
        self._max_retry_after = max_retry_after
        self._acknowledge_timeout = acknowledge_timeout
        self._thread_lookup_timeout = thread_lookup_timeout
        self._queue: asyncio.Queue[Item | Edit | Deletion | Access | Unsure] = asyncio.Queue()
        self._edits: MessageEdited | None = None
        self._deletions: MessageDeleted | None = None
        self._deleted_first: OrderedDict[int, None] = OrderedDict()
        """Messages whose deletion dropped nothing, by id: one handed over after it is not (`discord_deletions`)."""
        self._held_edits: OrderedDict[int, discord.Message] = OrderedDict()
        """By message id, the latest of its member's edits held for the store (`discord_opened.Unsure`): each held
        is read so at its turn. discord.py changes the message it caches in place at each edit, so the message held
        is read as last edited; its earlier edit, read as it came, took it back to an older text."""
        self._membership = Membership(lambda access: self._queue.put_nowait(access))
        self._last_seen = LastSeen()
        self._caught_up = asyncio.Event()
        """Clear from a new session's READY until its catch-up is done: live events wait, behind older ones."""
        self._caught_up.set()
        self._catch_up_task: asyncio.Task[None] | None = None
        self._catch_ups: set[asyncio.Task[None]] = set()
        """Every catch-up not ended: the current one, and those a newer READY cancelled, still winding down."""
        self._connected = asyncio.Event()
        self._stopping = False
        self._stop_asked = asyncio.Event()
        """Set as a stop begins: a consumer waiting to hand an event over again gives up at once."""
        self._receiving: set[asyncio.Task[Any]] = set()
        """Slash commands being acknowledged, not queued yet: a stop waits for them. Briefly: it gives up
        their "thinking…" calls as it begins (they go on, perhaps acknowledged, `discord_commands.received`)."""
        self._unrecorded = Unrecorded()
        """What a stop left unrecorded (`platforms.discord_unrecorded`): commands it answers, channels held back."""
        self._swept = False
        """Set once a stop has taken the last of the queue: a command received later would wait in it for good."""
        self._twins = Twins()
        self._posted = discord_sent.Posted()
        self._commands_in: OrderedDict[int, None] = OrderedDict()
        """The slash commands this process received, by interaction id, most recent last: one Discord delivers
        again (a RESUME's replay) is dropped (`_on_command`)."""
        self._posted_in: OrderedDict[int, None] = OrderedDict()
        """Channels and threads the bot has posted in (or was told of at start), least recent first:
        the latest `REMEMBERED_CHANNELS` of them."""
        self._answers = discord_opened.Answers(monotonic)
        """The bot's answers (their message ids), those of before a restart asked of the store: a thread opened on one
        is the bot's."""
        self._refused_replies = RefusedReplies(clock)
        self._locked = discord_locked.LockedThreads(clock)
        """Threads that refused a write as locked: no typing or edit there, answers to the thread's channel at once."""
        self._text_commands: tuple[str, ...] = ("!stop", "!new")
        self._content_warned = False
        self._watch = ConnectionWatch(self.name)
        self._token_watch = discord_token.token_watch()

    def connection(self) -> ConnectionState:
        """The gateway connection, from discord.py's ``on_connect``/``on_disconnect``/``on_resumed``
        and the exception its connection ends with (`platforms.connection`); ``down`` also while
        REST refuses the bot token, which the connection may outlive (`platforms.discord_token`)."""
        state = self._watch.state
        if state.status != "down" and (refusal := self._token_watch.refusal) is not None:
            return refusal
        return state

    def pacing(self, chat_id: str) -> Pacing:
        """discord.py paces calls per route bucket itself; edits of one message go a second apart."""
        return PACING

    def measure(self, text: str) -> int:
        """Characters of the content sent, the rendered Markdown, in code points: Discord's API counts them
        (discord/discord-api-docs#1315), so an astral emoji is one, not two UTF-16 units as Telegram's."""
        return len(discord_markdown.render(text))

    def web_routes(self) -> Sequence[Any]:
        return ()

    def remember_threads(self, threads: Iterable[tuple[str, str]]) -> None:
        """The gateway's stored thread sessions: after a restart the bot still hears every
        message in a thread it had posted in, which Discord's data alone does not tell."""
        for chat, thread in threads:
            remember(self._posted_in, int(thread), None, REMEMBERED_CHANNELS)
            self._membership.knows_thread(chat, thread)

    def bind_last_seen(self, last_seen: Mapping[str, str], seen: SeenRecorder, stored: SeenLookup) -> None:
        """The channels seen by earlier processes, caught up on at start (`platforms.discord_catch_up`).
        ``stored`` goes unused: Discord sends a channel's messages in order, one at a time, so a channel
        no longer in memory is only ever recorded past what is stored."""
        self._last_seen.bind(last_seen, seen)
        for channel in last_seen:  # a thread's too, which names no chat: harmless
            self._membership.knows(channel)

    def bind_answers(self, sent: AnswerLookup) -> None:
        """The outbox's message ids, which name the answers an earlier process sent (`platforms.discord_opened`)."""
        self._answers.bind(sent)

    def bind_edits(self, edited: MessageEdited) -> None:
        """Where a member's edit of their message goes (`HearsEdits`)."""
        self._edits = edited

    def bind_deletions(self, deleted: MessageDeleted) -> None:
        """Where a member's deletion of their message goes (`HearsDeletions`)."""
        self._deletions = deleted

    def bind_chat_lost(self, lost: ChatLost) -> None:
        """Where the chats the bot can no longer write to go (`LosesChats`, `platforms.discord_membership`)."""
        self._membership.bind(lost)

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Log in, connect, wait for READY and register ``commands``. Raises `DiscordStartError`
        (bad token, no answer to the login within ``login_timeout``, Message Content intent not enabled, no READY
        within ``ready_timeout``) or
        `discord_urls.DiscordInternalsChanged`; nothing is left running when it raises."""
        if self._client is not None:
            raise RuntimeError("the Discord adapter is already started")
        self._stopping = False
        self._queue, self._connected, self._stop_asked = asyncio.Queue(), asyncio.Event(), asyncio.Event()
        self._membership.queue_dropped()
        self._unrecorded, self._swept = Unrecorded(), False
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        self._watch, self._token_watch = ConnectionWatch(self.name), discord_token.token_watch()
        self._text_commands = tuple({"!stop", "!new", *(f"!{n}" for c in commands for n in (c.name, *c.aliases))})
        try:
            self._urls = discord_urls.claim(self._api_base)
            client = self._client = new_client(self._client_factory, self._token_watch, self._api_base,
                                               self._call_timeout)
            self._discord_time.watch(client.http.http_trace)  # the catch-up's clock, from the login's answers on
            self._interactions.session = discord_answers.open_session(self._call_timeout)
            client.on_connect = self._on_connect  # type: ignore[attr-defined]
            client.on_resumed = self._on_resumed  # type: ignore[attr-defined]
            client.on_disconnect = self._on_disconnect  # type: ignore[attr-defined]
            client.on_message = self._on_message  # type: ignore[attr-defined]
            client.on_raw_message_edit = self._on_edit  # type: ignore[attr-defined]
            client.on_raw_message_delete = self._on_delete  # type: ignore[attr-defined]
            client.on_raw_bulk_message_delete = self._on_delete  # type: ignore[attr-defined]
            client.on_guild_remove = self._on_guild_remove  # type: ignore[attr-defined]
            client.on_guild_channel_delete = self._on_channel_delete  # type: ignore[attr-defined]
            client.on_raw_thread_delete = self._on_thread_delete  # type: ignore[attr-defined]
            client.on_thread_remove = self._on_thread_remove  # type: ignore[attr-defined]
            client.on_raw_thread_update = self._on_thread_update  # type: ignore[attr-defined]
            # Not on_guild_available: an outage's end, or a new session's GUILD_CREATE, gives back no chat it took.
            client.on_guild_join = self._on_guild_back  # type: ignore[attr-defined]
            client.on_ready = functools.partial(self._on_ready, sink)  # type: ignore[attr-defined]
            tree = discord_commands.command_tree(client, commands, self._command_guilds, self._on_command)
            self._consumer = asyncio.create_task(self._deliver(sink), name="discord-inbound")
            login = asyncio.timeout(self._login_timeout)
            try:
                async with login:
                    await client.login(self._token)
                    gateway_url = self._gateway_url or await discord_urls.fetch_gateway_url(client)
            except LOGIN_ERRORS as exc:
                # Not from a proxy's refusal: its repr quotes the proxy's password, and its credentials.
                raise login_failed(exc, timeout=self._login_timeout if login.expired() else None) from (
                    None if proxy_refusal(exc) else exc)
            flags = client.application_flags
            if not (flags.gateway_message_content or flags.gateway_message_content_limited):
                log.error("discord: the Message Content intent is not enabled for this application; %s", PORTAL_HINT)
            self._urls.set_gateway(gateway_url)
            self._connect_task = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
            self._connect_task.add_done_callback(self._connection_ended)
            await self._wait_connected()
            if commands:
                await discord_commands.sync(tree, self._command_guilds)
        except BaseException:
            await self.stop()
            raise

    async def _wait_connected(self) -> None:
        assert self._connect_task is not None
        await wait_connected(self._connect_task, self._connected, self._ready_timeout)

    def _connection_ended(self, task: asyncio.Task[None]) -> None:
        # discord.py reconnects after anything but the close codes that say retrying cannot help.
        if task.cancelled() or self._stopping or not self._connected.is_set():
            return  # a start that failed raises it (_wait_connected)
        self._watch.down(ended_because(task.exception()))

    async def stop(self) -> None:
        """`stop_within` `DRAIN_SECONDS`, then `close`. Idempotent."""
        try:
            await self.stop_within(DRAIN_SECONDS)
        finally:
            await self.close()

    async def stop_within(self, seconds: float) -> None:
        """Take nothing more: close the gateway connection (`_disconnect`), hand over what was already
        queued for what is left of ``seconds``: what is not is read back at the next start if a message,
        and told `not taken` if a command; a command the gateway's sink still has then may be recorded (the sink
        records first, then routes), and is answered after the next start: told it may be, not that it was not
        taken (`Handing`). Those answers get what is left of ``seconds`` then, at least
        `LAST_CALLS_FLOOR`, and no more than that floor past ``seconds`` with the WebSocket's close
        (`last_calls_time`): an answer Discord has not taken by then is given up. The REST client stays open for
        the replies of the turns still ending, until `close`. Idempotent."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        self._stopping = True
        self._stop_asked.set()
        await self._disconnect(deadline)
        catching_up, self._catch_up_task = self._catch_up_task, None
        if catching_up is not None:  # what it had not handed over is looked for again at the next start
            catching_up.cancel()
        if self._catch_ups:  # with those a newer READY cancelled, which may be winding down still
            await asyncio.wait(set(self._catch_ups))
        if self._receiving:  # a command acknowledged as the connection closed: queued, then handed over below
            await asyncio.wait(set(self._receiving))
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            queued = asyncio.ensure_future(self._queue.join())
            if self._caught_up.is_set():  # else live events wait for a catch-up that will not finish
                await asyncio.wait({queued}, timeout=max(deadline - loop.time(), 0))
            queued.cancel()
            consumer.cancel()
            await asyncio.wait({consumer})
        self._swept = True
        while not self._queue.empty():  # held by a catch-up, or past the drain's time
            self._unrecorded.left(self._queue.get_nowait(), self._last_seen)
        await self._unrecorded.tell_not_taken(self._interactions.session, last_calls_time(deadline, loop.time()),
                                              self._interactions.settling, self._interactions.replied,
                                              self._interactions.acknowledged)

    async def _disconnect(self, deadline: float) -> None:
        """End the gateway connection, not the REST client, within `last_calls_time` of ``deadline``
        (`platforms.discord_connection`): its task first, so that nothing reconnects, then its WebSocket."""
        end_dispatching(self._client)
        task, self._connect_task = self._connect_task, None
        await disconnect(self._client, task, deadline)

    async def close(self) -> None:
        """Close the REST client and the session answers to commands go by, which `stop_within` left open
        for sending: every call from now on raises `NetworkError` ("the Discord adapter is not connected").
        Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        answers, self._interactions.session = self._interactions.session, None
        if answers is not None:
            await answers.close()
        urls, self._urls = self._urls, None
        if urls is not None:
            urls.release()

    async def _on_connect(self) -> None:
        # discord.py says "connect" at READY only: a new session, after which nothing missed is replayed.
        # Live events wait for this session's catch-up (`_on_ready`); an earlier one still running is
        # of no use any more and must not let them through when it ends.
        self._caught_up.clear()
        self._locked.forget()
        if self._catch_up_task is not None:
            self._catch_up_task.cancel()
            self._catch_up_task = None
        self._watch.connected()
        self._connected.set()

    async def _on_ready(self, sink: InboundSink) -> None:
        """The new session's guilds are known: ask for what was missed (`platforms.discord_catch_up`)."""
        earlier = set(self._catch_ups)  # cancelled at this session's connect, perhaps not ended yet
        task = self._catch_up_task = asyncio.create_task(self._catch_up(sink, earlier), name="discord-catch-up")
        self._catch_ups.add(task)
        task.add_done_callback(self._catch_up_ended)

    def _catch_up_ended(self, task: asyncio.Task[None]) -> None:
        self._catch_ups.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("discord: the catch-up failed", exc_info=exc)

    async def _catch_up(self, sink: InboundSink, earlier: set[asyncio.Task[None]]) -> None:
        async def deliver(message: discord.Message) -> None:
            await self._hand_over(sink, self._item_of(message))

        try:
            if earlier:
                # One catch-up at a time: a cancelled one may still be handing a message over (the sink
                # finishing its record), and would otherwise move the last message seen under this one.
                await asyncio.wait(earlier)
            client = self._require_client()
            seen = self._last_seen
            seen.not_caught_up(())  # each read again from where it was left; live events wait meanwhile
            left = await discord_catch_up.catch_up(client, dict(seen.last_seen), deliver, seen.seen,
                                                   now=self._discord_time.began(), token=self._token_watch,
                                                   deadline=self._catch_up_timeout, timer=self._catch_up_timer,
                                                   max_retry_after=self._max_retry_after)
            seen.not_caught_up(left.channels)
        finally:  # done, failed or cancelled: live events flow, unless a newer READY's catch-up holds them
            if self._catch_up_task is asyncio.current_task():
                self._caught_up.set()
        # Where each was left: it stays there until read again (a channel behind is not recorded further).
        await discord_catch_up.reread(client, left, dict(seen.last_seen), deliver, seen.seen, self._read_again,
                                      clock=self._discord_time.now)

    def _read_again(self, channel_id: int) -> None:
        """A channel behind is read again (`discord_catch_up.reread`): what was missed there is handed over, and
        its last message seen moves past it and what came live meanwhile; not in a channel a stop held back (a
        message there left unrecorded, which the read went on past): recorded, the newest message handed over
        live meanwhile moved it past the one left, which the next start's catch-up then never looked at."""
        if channel_id not in self._unrecorded.held_back:
            self._last_seen.caught_up(channel_id)

    async def _on_resumed(self) -> None:
        self._watch.connected()

    async def _on_disconnect(self) -> None:
        if not self._stopping:
            self._watch.reconnecting("the Discord gateway connection closed; discord.py reconnects")

    async def _deliver(self, sink: InboundSink) -> None:
        # One consumer: events reach the gateway one at a time, in the order they arrived, after
        # what a catch-up found (older).
        while True:
            item = await self._queue.get()
            handing = Handing(sink)
            try:
                try:
                    await self._caught_up.wait()
                    await self._hand_over(handing, item)
                except asyncio.CancelledError:
                    # A stop while the catch-up held it, or past the drain with the sink unfinished: as if still queued.
                    self._unrecorded.left(item, self._last_seen, cut_off=handing.under_way)
                    raise
            finally:
                self._queue.task_done()

    async def _hand_over(self, sink: InboundSink, item: Item | Edit | Deletion | Access | Unsure) -> None:
        if isinstance(item, Unsure):  # read once the store says whether its thread is on an answer of the bot's
            if not await self._answers.settle(item, self._stop_asked):
                if not item.edit:  # an edit a stop leaves is dropped (`Unrecorded.left`)
                    self._unrecorded.held_back.add(item.channel_id)
                    self._unrecorded.left(item, self._last_seen)
                return
            message = item.message
            if item.edit:  # as last edited (`_held_edits`)
                message = self._held_edits.get(item.message_id, message)
                if message is item.message:
                    self._held_edits.pop(item.message_id, None)
            inbound = self._inbound_of(message)
            if item.edit:
                if inbound is not None:
                    await self._hand_over_edit(inbound)
                return  # as `_on_edit` passes over an edit not for the bot
            item = (inbound, item.channel_id, item.message_id)
            if item[0] is None and item[1] not in self._last_seen.last_seen:
                return  # as `_on_message` passes over a message not for the bot
        if isinstance(item, Edit):
            await self._hand_over_edit(item.message)
            return
        if isinstance(item, Deletion):
            if self._deletions is not None and await discord_deletions.hand_over(
                    self._deletions, item, self._client, self._membership.thread_chat, self._stop_asked) == "missed":
                remember(self._deleted_first, item.message_id, None, discord_deletions.REMEMBERED_DELETIONS)
            return
        if isinstance(item, Access):
            await self._membership.tell(item)
            return
        inbound, channel_id, message_id = item
        if inbound is not None and message_id in self._deleted_first:  # read again after its deletion came live
            log.info("discord: message %s came after its deletion; not handed over", message_id)
            inbound = None
        if inbound is not None:
            inbound = await self._in_thread(inbound)
            self._membership.handed_over(inbound.chat_id, inbound.thread_id)  # someone writes there: the bot may too
        outcome = "left" if channel_id in self._unrecorded.held_back else \
            "recorded" if inbound is None else await until_recorded(sink, inbound, self._stop_asked)
        # Else a slash command shows "thinking…" until its token expires, and a text command (!stop) nothing.
        if outcome == "dropped" and inbound is not None and (
                inbound.is_command or discord_inbound.text_command(inbound, self._text_commands)):
            self._unrecorded.not_handled(inbound, self._send_privately)
        if outcome == "left":
            self._unrecorded.held_back.add(channel_id)
            # A command the gateway recorded without committing it may still be answered (`Handing`).
            self._unrecorded.left(item, self._last_seen, cut_off=isinstance(sink, Handing) and sink.under_way)
            return  # not seen: the next start's catch-up hands it over
        if message_id:
            self._last_seen.seen(channel_id, message_id)

    async def _hand_over_edit(self, message: Inbound) -> None:
        """Until the gateway has recorded the edit, as an event (`until_recorded`): Discord never sends it again."""
        edited, message_id = self._edits, message.message_id
        if edited is None or message_id is None:
            return
        message = await self._in_thread(message)

        async def hand_over(_: Inbound) -> None:  # its message perhaps keyed before its thread was known
            await by_either_key(lambda chat, thread: edited(self.name, chat, thread, message_id, message.text),
                                message.chat_id, message.thread_id)

        await until_recorded(hand_over, message, self._stop_asked)

    async def _in_thread(self, message: Inbound) -> Inbound:
        """``message`` in its thread's conversation, (parent channel, thread), when discord.py handed it over without
        the thread, which the gateway did not know either (`discord_inbound.chat_of`): by the thread discord.py
        holds by now, or the gateway knows by now (an earlier message there handed over: those queued behind it ask
        no more), else by the one Discord sends (``GET /channels/{id}``). Asked for here, in the order of the
        events, so that nothing said after it overtakes it, within `THREAD_LOOKUP_TIMEOUT`: every chat's events wait
        for it. A channel's own message, as it was, and so is one whose thread Discord did not send in time (logged):
        heard, in a conversation of its own."""
        client = self._client
        if client is None or message.is_private or message.is_command or message.thread_id is not None:
            return message
        channel_id = int(message.chat_id)
        thread_chat = self._membership.thread_chat
        channel: Any = client.get_channel(channel_id)
        if channel is None and thread_chat(channel_id) is None:
            try:
                channel = await asyncio.wait_for(client.fetch_channel(channel_id), self._thread_lookup_timeout)
            except TimeoutError:
                log.warning("discord: Discord did not say within %g s whether channel %s is a thread; its message %s "
                            "is answered as the channel's own", self._thread_lookup_timeout, channel_id,
                            message.message_id)
                return message
            except Exception as exc:
                log.warning("discord: could not ask Discord whether channel %s is a thread (%s); its message %s is "
                            "answered as the channel's own", channel_id, described(exc), message.message_id)
                return message
        chat_id, thread_id = discord_inbound.chat_of(channel, channel_id, thread_chat)
        return replace(message, chat_id=chat_id, thread_id=thread_id)

    # ---- inbound -----------------------------------------------------------------------------

    async def _on_message(self, message: discord.Message) -> None:
        me = self._client.user if self._client is not None else None
        if me is not None and message.author.id == me.id:
            self._twins.heard(message.id, message.channel.id, message.nonce)
            self._posted.heard(message.nonce, message.id, message.channel.id)
            self._answers.posted(message)  # before Discord's answer to the post: a thread may be opened on it now
        item = self._item_of(message)
        # Any message moves a channel's last seen forward, so a catch-up there looks only at what came after.
        if isinstance(item, Unsure) or item[0] is not None or message.channel.id in self._last_seen.last_seen:
            self._queue.put_nowait(item)

    async def _on_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """A message changed (``MESSAGE_UPDATE``): the raw event, which discord.py sends whether it has the message
        cached or not (``on_message_edit`` comes only when it has), so each edit is heard once. A member's edit of
        a message for the bot is read as the message is, as it now reads (`platforms.discord_inbound`), and
        queued behind the events before it; in a thread the store could not say is on an answer of the bot's, held
        for it as a message there is (`discord_opened.Unsure`). Discord also says so of changes no one typed (a
        link's preview added, a pin): the text as it was, they change nothing."""
        if self._edits is None:
            return
        item = self._item_of(payload.message)
        if isinstance(item, Unsure):
            remember(self._held_edits, item.message_id, payload.message, discord_deletions.REMEMBERED_DELETIONS)
            self._queue.put_nowait(replace(item, edit=True))
        elif item[0] is not None:
            self._queue.put_nowait(Edit(item[0]))

    async def _on_delete(self, payload: discord.RawMessageDeleteEvent | discord.RawBulkMessageDeleteEvent) -> None:
        """A message deleted (``MESSAGE_DELETE``), or a moderator's purge (``MESSAGE_DELETE_BULK``): raw, so heard
        whether discord.py has the message cached or not, and queued behind the events before it."""
        if self._deletions is not None:
            for deletion in discord_deletions.deletions(payload):
                self._queue.put_nowait(deletion)

    async def _on_guild_remove(self, guild: discord.Guild) -> None:
        """``GUILD_DELETE`` without ``unavailable``: the bot was removed from the server, whose chats' work the
        gateway stops (`platforms.discord_membership`). An outage is ``on_guild_unavailable``: nothing stops."""
        self._membership.removed(guild)

    async def _on_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        self._membership.deleted(channel)

    async def _on_thread_delete(self, event: discord.RawThreadDeleteEvent) -> None:
        """``THREAD_DELETE``, raw: a thread discord.py no longer holds (archived, or from before a restart) too."""
        self._locked.drop(event.thread_id)
        self._membership.thread_lost(str(event.parent_id), str(event.thread_id), THREAD_DELETED)

    async def _on_thread_update(self, event: discord.RawThreadUpdateEvent) -> None:
        """``THREAD_UPDATE``, raw: a thread unlocked takes its answers again (`discord_locked.LockedThreads`)."""
        self._locked.updated(event)

    async def _on_thread_remove(self, thread: discord.Thread) -> None:
        """The bot removed from a thread (``THREAD_MEMBERS_UPDATE``): a private one it may no longer write to, unless
        it manages threads there (`kept_out`); to a public one it may still post, which joins it again."""
        if thread.type is discord.ChannelType.private_thread and thread.parent_id is not None and kept_out(thread):
            self._membership.thread_lost(str(thread.parent_id), str(thread.id), THREAD_LEFT)

    async def _on_guild_back(self, guild: discord.Guild) -> None:
        """The bot added to a server (back): its chats may be written to again."""
        self._membership.back(guild)

    def _inbound_of(self, message: discord.Message) -> Inbound | None:
        """The event for the gateway, if the message is for the bot (`platforms.discord_inbound`)."""
        item = self._item_of(message)
        return None if isinstance(item, Unsure) else item[0]

    def _item_of(self, message: discord.Message) -> Item | Unsure:
        """``message`` read (`platforms.discord_inbound`), queued so; or, not for the bot unless its thread was opened
        on an answer of the bot's, which the store could not say, held until it does (`discord_opened.Unsure`)."""
        me = self._client.user if self._client is not None else None
        unsure = self._answers.heard(message)
        inbound = discord_inbound.inbound_of(message, me, posted_in=self._posted_in, text_commands=self._text_commands,
                                             no_content=self._no_content, thread_chat=self._membership.thread_chat,
                                             answers=self._answers)
        if inbound is None and unsure:
            return Unsure(message)
        return inbound, message.channel.id, message.id

    def _no_content(self) -> None:
        if not self._content_warned:
            self._content_warned = True
            log.error("discord: a message for the bot arrived without content; is the Message Content "
                      "intent enabled? %s", PORTAL_HINT)

    async def _on_command(self, interaction: discord.Interaction, name: str, args: str | None) -> None:
        if interaction.id in self._commands_in:
            # Handed over already, or on its way: left at a stop, the repeat was answered "Not taken" in place of
            # the first delivery's answer or "thinking…" (same token), and a user sending it again got two turns.
            log.info("discord: /%s from user %s (interaction %s) was delivered again; dropped", name,
                     interaction.user.id, interaction.id)
            return
        remember(self._commands_in, interaction.id, None, REMEMBERED_COMMANDS)
        task = asyncio.current_task()
        assert task is not None
        self._receiving.add(task)
        try:
            inbound = await discord_commands.received(interaction, name, args, deferred=self._interactions.deferred,
                                                      unsure=self._interactions.unsure,
                                                      unacknowledged=self._interactions.unacknowledged,
                                                      stopping=self._stop_asked, timeout=self._acknowledge_timeout)
        finally:
            self._receiving.discard(task)
        if self._swept:
            # discord.py calls this from a task of its own, today in its first step, before the stop looks at those
            # receiving. Should it pause first, the stop may have taken the last of the queue already: told here
            # that it was not taken, rather than left in a queue no one reads any more.
            await discord_commands.tell_not_taken([inbound], self._interactions.session, LAST_CALLS_FLOOR,
                                                  self._interactions.settling,
                                                  acknowledged=self._interactions.acknowledged)
            return
        self._queue.put_nowait((inbound, 0, 0))  # an interaction is no message of the channel's history

    # ---- outbound ----------------------------------------------------------------------------

    async def send(self, message: Outbound) -> Sent:
        """Post one part; an answer to a command goes through the interaction while its token lives."""
        message = replace(message, text=scalar_text(message.text))  # a lone surrogate cannot be encoded
        if message.reply_token:
            try:
                return await self._interactions.answer(message)
            except NotFound as exc:
                if message.private:
                    raise self._not_in_channel(message.reply_token, exc) from exc
                if self._interactions.acknowledged(message.reply_token):  # else said once (`discord_commands.received`)
                    log.info("discord: interaction expired; answering in channel %s instead", message.chat_id)
        return await self._post_or_move(message, functools.partial(
            discord_posts.post, self._channel, self._twins, self._posted_in, self._refused_replies, message))

    async def _post_or_move(self, message: Outbound, post: Callable[[], Awaitable[Sent]],
                      file: OutboundFile | None = None) -> Sent:
        """``post`` (``message``'s, with ``file``), in its thread's channel when the thread refuses it as locked
        (`discord_locked`); at once, without trying the thread, while the thread is known locked, or nowhere then
        when it goes to no channel (`LockedThreads.refuses`)."""
        if self._locked.refuses(message, self._client):
            assert message.thread_id is not None
            raise discord_locked.unposted(message.thread_id)
        if message.kind != "command":  # as `_noted` counts answers
            self._answers.sending(nonce_of(message.idempotency_key))
        if not self._locked.at_once(message, self._client):
            with self._membership.writing(message.chat_id, message.thread_id):  # refused as closed: the chat is lost
                sent = await self._post_in_thread(message, post)
            if sent is not None:
                if message.thread_id is not None:
                    self._locked.drop(message.thread_id)
                return self._noted(message, sent, message.thread_id or message.chat_id)
        with self._membership.writing(message.chat_id, None):  # the thread locked: its channel's (`discord_locked`)
            return self._noted(message, await discord_locked.post(self._channel, self._twins, message, file),
                               message.chat_id)

    async def _post_in_thread(self, message: Outbound, post: Callable[[], Awaitable[Sent]]) -> Sent | None:
        """``post`` in ``message``'s thread (or channel); None when the thread refused it as locked and it goes to
        the thread's channel (`discord_locked.to_its_channel`). Tried once more when the thread was unlocked as it
        refused: Discord said so while the post was on its way (`LockedThreads.unlocks`), or, asked after the
        refusal, it reads unlocked; a private thread's answer, which goes nowhere else, failed as Discord's 403."""
        tried = False
        while True:
            unlocks = self._locked.unlocks(message.thread_id)
            try:
                with self._locked.writing(message.thread_id):  # a notice refused so too: no more typing there
                    return await post()
            except Forbidden as exc:
                if message.thread_id is None or not discord_locked.locked_out(exc):
                    raise
                moving: bool | None | discord_locked.Unlocked = discord_locked.UNLOCKED
                if not self._locked.unlocked_since(message.thread_id, unlocks):
                    if not discord_locked.moves(message, exc):
                        raise
                    moving = await self._to_its_channel(message)
                if moving == discord_locked.UNLOCKED:
                    self._locked.drop(message.thread_id)
                    if tried:
                        raise
                    tried = True
                    log.info("discord: thread %s refused the bot's message as locked as it was unlocked; trying it "
                             "there again", message.thread_id)
                    continue
                self._locked.refused(message.thread_id, moving)
                if not moving:
                    raise
                return None

    async def _to_its_channel(self, message: Outbound) -> bool | None | discord_locked.Unlocked:
        """Whether ``message``, refused in its locked thread, may go to the thread's channel (`discord_locked`)."""
        assert message.thread_id is not None
        return await discord_locked.to_its_channel(self._client, message.thread_id, self._thread_lookup_timeout)

    def _noted(self, message: Outbound, sent: Sent, posted_in: str) -> Sent:
        """``sent`` (posted in the channel ``posted_in``), noted among the bot's answers when ``message`` is one
        (anything but a command's answer or a refusal, as `discord_posts.joins` counts them; a progress card too, on
        which a member's thread is for the bot all the same): whoever opens a thread on it talks to the bot. Only in
        a channel discord.py holds that takes threads on its messages: a DM, a thread or a forum's post takes none,
        and their answers' ids only crowded the channels' out of the memory."""
        client = self._client
        if message.kind != "command" and client is not None \
                and isinstance(client.get_channel(int(posted_in)), discord.TextChannel):
            self._answers.noted(int(sent.message_id))
        return sent

    def _not_in_channel(self, reply_token: str, exc: NotFound) -> NotFound:
        """The failure of an answer for its command's user alone whose interaction is gone (``exc``): in the
        channel, a stranger's refusal would name them to everyone, so it is not posted there instead."""
        why = "the interaction expired" if self._interactions.acknowledged(reply_token) else UNACKNOWLEDGED
        return NotFound(f"{why}: an answer for its user alone is not posted in the channel instead",
                        method=exc.method, chat_id=exc.chat_id, platform=self.name)

    async def _send_privately(self, message: Outbound) -> Sent:
        """`send`, a slash command's answer to its user alone (`discord_interactions.Interactions.private`); in the
        channel if Discord refused the command's acknowledgement: a word that it could not be handled, which
        names no one, and Discord told its user alone only that the application did not respond."""
        if message.reply_token and self._interactions.acknowledged(message.reply_token):
            self._interactions.private(message.reply_token)
            message = replace(message, private=True)
        return await self.send(message)

    def refused(self, inbound: Inbound) -> None:
        """The gateway refused ``inbound``'s sender (`platforms.base.HearsRefusals`): a slash command's refusal
        goes to its user alone, not to the channel that sees its "thinking…" (`discord_interactions`); through an
        interaction Discord did not acknowledge, nowhere (`Interactions.unacknowledged`): not in the channel instead."""
        if inbound.is_command and inbound.reply_token is not None:
            self._interactions.private(inbound.reply_token)

    def answers_privately(self, reply_token: str) -> bool:
        """Whether the gateway's answer through ``reply_token`` is for the command's user alone (`refused`): the
        outbox journals it so (`platforms.base.Outbound.private`), and a restart sends it as privately."""
        return self._interactions.is_private(reply_token)

    def findable(self, message: Outbound) -> bool:
        """For `find_sent`: not the part that replaces a command's "thinking…" (`platforms.discord_sent`), nor an
        answer to its user alone: an ephemeral message is in no channel's history, nor sent over the gateway, nor
        can the interaction's webhook name it but by its id (``@original`` is the deleted "thinking…"): it is sent
        again, a possible second copy to its user rather than a possible loss (docs/platforms/discord.md)."""
        if message.private:
            return False
        return discord_sent.findable(self._interactions, message)

    async def find_sent(self, message: Outbound, since: float) -> str | None:
        """The id of the message posted for this part: a post this process heard, or a command's follow-up
        in its channel's history (`platforms.discord_sent`)."""
        message = replace(message, text=scalar_text(message.text))  # as `send` posted it
        if message.reply_token:
            channel = self._channel(message.thread_id or message.chat_id)
            # ``since`` is on the host's clock, the history's snowflakes on Discord's: a host ahead of Discord by more
            # than the margin looked after the post, missed it, and it was posted twice.
            since += self._discord_time.now() - self._clock()
            try:
                return await discord_sent.find_answer(self._interactions, channel, message, since)
            except NotFound:
                pass  # the interaction's token is gone: the part went to the channel (`send`), with its nonce
        found = discord_sent.find_sent(self._posted, message)
        if found is None:
            return None
        message_id, posted_in = found  # its post's answer lost: a thread may be opened on it all the same
        return self._noted(message, Sent(message_id), posted_in).message_id

    def upload_limit(self, chat_id: str) -> int:
        """The guild's limit per file (by its boost level); 10 MiB in DMs and for a channel
        discord.py has not seen."""
        channel = self._client.get_channel(int(chat_id)) if self._client is not None else None
        guild = getattr(channel, "guild", None)
        return guild.filesize_limit if guild is not None else discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Post the file in the message's channel or thread, with the part's nonce (`platforms.discord_posts`).
        One for its command's user alone (``private``: the ``answer.md`` of a long private answer,
        `gateway.long_messages`) goes to them alone, as an ephemeral follow-up of the interaction, as its parts
        do; never in the channel, where a refusal's or a failed command's answer names its user to everyone: past
        the interaction's 15 minutes it is not sent at all (`NotFound`, as `send` says)."""
        if message.private:
            message = replace(message, text=scalar_text(message.text))  # a lone surrogate cannot be encoded
            if message.reply_token is None:  # no interaction to carry it: nothing reaches its user alone
                raise BadRequest("a file for a command's user alone is not posted in the channel",
                                 method=discord_posts.ROUTE, chat_id=message.chat_id, platform=self.name)
            try:
                return await self._interactions.answer(message, file)
            except NotFound as exc:
                raise self._not_in_channel(message.reply_token, exc) from exc
        return await self._post_or_move(message, functools.partial(
            discord_posts.post_file, self._channel, self._twins, self._posted_in, self._refused_replies, message,
            file), file)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """Replace a message's text; command answers are edited through their interaction. In a thread known locked,
        refused without a call (`discord_locked.unedited`)."""
        if self._interactions.token_of(message_id) is None and self._locked.shut(thread_id, self._client):
            assert thread_id is not None
            raise discord_locked.unedited(thread_id)
        with self._membership.writing(chat_id, thread_id), self._locked.writing(thread_id):
            await discord_edits.edit(self._interactions, self._channel, chat_id, thread_id, message_id, text)

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """Refreshed every few seconds while a turn runs, warned of once per channel and reason
        (`platforms.discord_typing`); not sent in a thread known locked, which shows no one typing."""
        if self._locked.shut(thread_id, self._client):
            return
        with self._membership.writing(chat_id, thread_id), self._locked.writing(thread_id):
            await self._typing.show(chat_id, thread_id)

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        """Nothing to clear: Discord ends the typing indicator when the bot posts, or after ~10 s."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        """Delete one of the bot's messages (a command answer through its interaction); one that is
        already gone counts as deleted (`platforms.discord_edits`)."""
        await discord_edits.delete(self._interactions, self._channel, chat_id, thread_id, message_id)

    async def download(self, attachment: Attachment) -> bytes:
        """The attachment's bytes from its URL, stopped past ``max_attachment_bytes``."""
        return await discord_files.download(attachment, self.max_attachment_bytes)

    def _require_client(self) -> discord.Client:
        if self._client is None:
            raise NetworkError("the Discord adapter is not connected")
        return self._client

    def _channel(self, channel_id: str) -> discord.PartialMessageable:
        return self._require_client().get_partial_messageable(int(channel_id))

