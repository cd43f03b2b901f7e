"""Slack on slack-bolt (async): Socket Mode (`platforms.slack_socket`) or the HTTP Events API
(`platforms.slack_http`).

Sessions (`platforms.slack_addressed`): a DM is one session (``thread_id`` None). In channels the
bot answers when mentioned and each thread is its own session: ``thread_id`` is the thread's ``thread_ts``, or
the message's own ``ts`` when the mention starts a thread; replies go into that thread. Once
the bot is in a thread (mentioned there, or it answered a message there: the answer to a
command does not count, nor one Slack refused) later replies in it need no mention; after a restart the gateway
tells it its threads (`remember_threads`). A mention by someone the gateway refuses does not count either: told
(`refused`), the adapter forgets a thread only refused users' mentions brought it into.
``!stop``/``!new`` (``!`` + any command or alias the gateway serves, in any case, with or
without arguments) typed in a thread pass through as plain text, because Slack refuses slash commands inside threads.

A message's text reaches the gateway with Slack's links, channels and mentions as Slack shows
them (a user by their username, where the ``users:read`` scope lets it be looked up: `platforms.slack_names`),
followed by the messages forwarded with it (`platforms.slack_text`). Shared files arrive as `Attachment`s
(`platforms.slack_files`) with the message text;
`download` fetches one through ``files.info`` and ``url_private`` with the bot token
(scope ``files:read``), refusing files over ``max_attachment_bytes``.

Messages come from ``message.*`` subscriptions only; ``app_mention`` events are acked and
ignored, so a mention seen through both subscriptions becomes one `Inbound`. ``tokens_revoked``
(for the bot) and ``app_uninstalled``, like a Web API call refused for the bot token, make the
platform ``down`` (`platforms.slack_connection.BotToken`). The bot removed from a channel, or the channel archived
or deleted (``channel_left``, ``member_left_channel``, ``channel_archive``, …), or a write Slack refuses so, tells
the gateway once that it can no longer write there (`LosesChats`, `platforms.slack_membership`): it stops the
channel's work. A private channel shared with another organization gets a new id (``channel_id_changed``): the
gateway goes on knowing it by the old one, its session and what is under way there with it (`MovesChats`,
`platforms.slack_moves`). Messages
with a subtype other than ``file_share``/``thread_broadcast`` (joins, topics) and
messages from bots, this one included, are ignored. A user's edit (``message_changed``) goes to the gateway
(`HearsEdits`), read as the message is (`platforms.slack_edits`): a message still waiting for its turn is
answered as edited, and so is one whose edit came first (Slack does not order events); any other edit
changes nothing and starts no turn. A user's deletion (``message_deleted``, or a thread's parent made a tombstone)
goes to the gateway too (`HearsDeletions`): a message still waiting for its turn is not answered. Acked once the
gateway has it, as a message is (unacked, Slack sends it again).

Acks: bolt runs our listeners before it acks (``process_before_response``), with no Web API call
of its own first (`platforms.slack_app`), and the sink only
records and queues, so the ack still leaves at once; if the sink fails, Slack is not acked and
redelivers (for a few minutes: a store's refusal is handed over again here too). One not done
``sink_timeout`` after its request came (in HTTP mode, before it queued for its signature check)
is acked first, and is then the adapter's to keep (handed over again,
`platforms.slack_handover`; never recorded as seen past until taken, `platforms.slack_seen`). ``event_id`` is ``<channel>:<ts>`` for a message, which names it in Slack for good,
and ``command:<trigger_id>`` for slash commands; the gateway inbox drops repeats. Not Slack's own
``event_id``: retries keep it, but Slack has also sent one message as several events, each with
an ``event_id`` of its own and no retry header (node-slack-sdk#2141). Slack does not order
events; a message waiting for the names of the users it mentions holds the next of its channel, so that they are
handed over in the order they came (up to `platforms.slack_names.ACK_BUDGET` after that one came); one reading a
Slack Connect file's details holds none.

Messages sent while the gateway was down (Slack stopped retrying them) are read back at start and
handed on as their live events, before the live ones of their conversation (`platforms.slack_catchup`;
`bind_last_seen` says how far each conversation was taken in); so are those sent while Socket Mode's
connection was lost for longer than `Limits.after_outage`, at the reconnect (`_reconnected`).

Slash commands are acked empty, as events are: once the gateway has recorded them (Slack never
sends a command again, nor keeps it in a history), or ``sink_timeout`` after it came; they are answered
ephemerally through the command's ``response_url``, falling back to ``chat.postEphemeral``
(`platforms.slack_commands`). One the gateway failed on before the ack is told so in the ack itself.
Ephemeral messages cannot be edited, nor carry a file: each answer is journaled as for its user alone
(`answers_privately`), and a long one's rest is left out with a note, not shared in the channel.

Progress: Slack bots have no typing indicator; a placeholder message per chat/thread stands in
for one, deleted when the turn ends (`platforms.slack_placeholders`).

Sending: the gateway hands over Markdown, rendered here to mrkdwn
(`platforms.formatting.slack_mrkdwn`) and sent as ``text``, up to 4,000 characters of
it, which Slack recommends and renders well (it truncates above 40,000); `measure`
counts the rendered text, or the Markdown when that is longer. mrkdwn in ``text`` is
never refused; should Slack still answer a formatting error (``invalid_blocks``,
``invalid_blocks_format``), the same part goes once more as plain text (the Markdown
as written, ``mrkdwn: false``; `platforms.slack_calls`). No other error does that. The Web API
client has no retry handlers: a 429 becomes `RateLimited` with ``Retry-After`` at once, for the
gateway to retry; nothing here sleeps on the sending path or holds a lock shared between chats.
A call Slack does not answer within `CALL_TIMEOUT` is a `NetworkError`: it may have taken effect,
so the outbox looks a post up before it posts it again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from platforms import (
    slack_commands,
    slack_edits,
    slack_files,
    slack_history,
    slack_membership,
    slack_names,
    slack_posts,
    slack_scopes,
    slack_socket,
    slack_uploads,
    unsigned_bodies,
)
from platforms.base import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    Accepted,
    Attachment,
    BadRequest,
    ChatLost,
    ChatMoved,
    CommandSpec,
    DisplayTier,
    Inbound,
    InboundSink,
    IndicatorLeft,
    MessageDeleted,
    MessageEdited,
    NetworkError,
    Outbound,
    OutboundFile,
    SeenLookup,
    SeenRecorder,
    Sent,
    last_calls_time,
)
from platforms.connection import NO_CONNECTION, ConnectionState
from platforms.formatting import slack_mrkdwn
from platforms.pacing import Pacing
from platforms.proxies import proxy_for
from platforms.slack_addressed import Addressed, addressed
from platforms.slack_app import bolt_app
from platforms.slack_calls import WebApi
from platforms.slack_catchup import CatchUp, Limits, Where, ts_key
from platforms.slack_client import SlackWebClient
from platforms.slack_connection import BotToken, SocketWatch
from platforms.slack_delivery import Delivery
from platforms.slack_handover import READ_BACK, Retries, until_taken
from platforms.slack_http import SignedEvents
from platforms.slack_inbound import Taken, conversations_of, mentioned, taken_of, text_of
from platforms.slack_membership import Membership
from platforms.slack_message_limit import MessageLimit
from platforms.slack_moves import ChannelMoves
from platforms.slack_names import Names
from platforms.slack_placeholders import Placeholders
from platforms.slack_seen import TakenIn
from platforms.slack_socket import CONNECT_TIMEOUT
from platforms.slack_socket import SlackStartError as SlackStartError  # what `start` raises, beside the adapter
from platforms.slack_unacked import SentAgain, Stopping, listener_failed
from platforms.slack_under_way import UnderWay
from platforms.unsigned_bodies import UnsignedBodies

log = logging.getLogger("platforms.slack")

PACING = Pacing(call_interval=1.0, edit_interval=1.0, account_edit_interval=1.2, account_file_interval=0.6,
                account_delete_interval=1.2, account_lookup_interval=1.2)
"""Slack's rate-limit guide: chat.postMessage about one a second per channel; per workspace, chat.update,
chat.delete and the history reads of `find_sent` Tier 3 (50 a minute each) and files.getUploadURLExternal /
files.completeUploadExternal Tier 4 (100 a minute)."""

DEFAULT_API_BASE = "https://slack.com/api/"
_REMEMBERED_THREADS = 10_000
SINK_TIMEOUT = 2.0
STOP_SECONDS = 5.0
"""How long a stop not given its time by the gateway (`SlackAdapter.stop`) gives its last calls at most."""
CALL_TIMEOUT = 30.0
"""Seconds each request on the adapter's HTTP session is given (slack-sdk's own ``timeout``): its Web API calls
and a slash command's ``response_url`` answer. slack-sdk applies its ``timeout`` only to a session it opens
itself, so aiohttp's 300 s bounded these, and a Slack that took a post and went silent held it, and the chat
behind it, for 5 minutes. The bytes of files have bounds by their size (`platforms.slack_uploads`,
`platforms.slack_files`); Socket Mode's WebSocket is on slack_sdk's own session, never cut by this."""


class SlackAdapter:
    name = "slack"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=True,
                       progress="card")
    text_limit = 4000
    caption_limit = text_limit
    """A file's caption is the ``initial_comment`` Slack posts with it, as long as a post may be."""
    typing_interval = 30.0
    """The placeholder does not lapse; a refresh only re-posts one whose post failed."""
    findable = staticmethod(slack_history.findable)  # for `find_sent`: a slash command's answer it cannot find
    finds_files = False
    """A file share carries no key to find it by in a channel's history: its upload settles a lost answer itself."""

    def __init__(
        self,
        *,
        bot_token: str,
        mode: Literal["socket", "http"] = "socket",
        app_token: str | None = None,
        signing_secret: str | None = None,
        api_base: str = DEFAULT_API_BASE,
        ping_interval: float = 10.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        placeholder_text: str = "_working…_",
        sink_timeout: float = SINK_TIMEOUT,
        max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES,
        bodies: UnsignedBodies | None = None,
        catch_up: Limits = Limits(),
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        call_timeout: float = CALL_TIMEOUT,
    ) -> None:
        """``catch_up`` bounds the catch-up at start (`platforms.slack_catchup`); ``clock`` (epoch
        seconds) ages the messages it reads until Slack's first answer tells its time; ``monotonic`` counts on
        from then, and when its retries give up, measures Socket Mode's outages with ``clock`` (`_reconnected`)
        and how long edits are remembered (`slack_edits.LatestEdits`); ``call_timeout`` bounds each Web API call
        (`CALL_TIMEOUT`)."""
        if mode not in ("socket", "http"):
            raise ValueError(f"slack mode must be 'socket' or 'http', not {mode!r}")
        if mode == "socket" and not app_token:
            raise ValueError("slack socket mode needs an app_token (xapp-...)")
        if mode == "http" and not signing_secret:
            raise ValueError("slack http mode needs a signing_secret")
        self.mode = mode
        self._bot_token, self._app_token, self._signing_secret = bot_token, app_token, signing_secret
        self._api_base, self._ping_interval, self._placeholder_text = api_base, ping_interval, placeholder_text
        self._connect_timeout, self._call_timeout = connect_timeout, call_timeout
        self._bodies = bodies or UnsignedBodies()
        """Bounds the HTTP-mode bodies read before their signature is checked (a seam for tests)."""
        self._events = SignedEvents(signing_secret, self._bodies, lambda: self._app)
        self.max_attachment_bytes = max_attachment_bytes
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._app: AsyncApp | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._sink: InboundSink | None = None
        self._edits: MessageEdited | None = None
        self._deletions: MessageDeleted | None = None
        self._latest_edits = slack_edits.LatestEdits(monotonic=monotonic)
        self.bot_user_id: str | None = None
        self._mention: re.Pattern[str] | None = None
        self._text_commands: frozenset[str] = frozenset()
        self._threads: OrderedDict[tuple[str, str], frozenset[str] | None] = OrderedDict()
        """The threads the bot is in, least recent first: None once it is in for good (it posted there, or a
        stored session's), else the users whose mentions brought it in, until the gateway refuses them."""
        self._metadata = slack_history.Metadata()
        self._bot_token_state = BotToken()
        self._membership = Membership()
        self._moves = ChannelMoves()
        self._web = WebApi(lambda: self._client, self._bot_token_state, lambda: self._progress.accepted(),
                           failed=self._membership.refused, where=self._moves.now)
        self._reads = slack_history.PacedReads(self._page)
        self._under_way = UnderWay(self._word)
        """Listeners, background tasks and commands being handed over, which a stop ends or answers."""
        self._background = self._under_way.background
        self._names = Names(lambda user: self._web.call("users.info", None, user=user, caller_logs=True),
                            background=self._background, monotonic=monotonic)
        """The handles of the users messages mention (`platforms.slack_names`), its lookups ended by a stop."""
        self._reading: dict[str, asyncio.Future[None]] = {}
        """Per channel, the latest message waiting for the names it mentions: the next one is handed over after it."""
        # delivery.max_retry_after reaches the adapter with the catch-up's limits (`gateway.platform_factory`).
        self._message_limit = MessageLimit(max_retry_after=catch_up.max_retry_after, monotonic=monotonic)
        self._stuck_edits = slack_posts.StuckEdits()
        self._progress = Placeholders(text=placeholder_text, api=self._web.call, with_metadata=self._metadata.post,
                                      page=self._reads, pages=slack_history.LOOKUP_PAGES,
                                      background=self._background,
                                      started=lambda: self._client is not None and not self._stopping,
                                      limit=self._message_limit, max_retry_after=catch_up.max_retry_after)
        self._stopping = False
        self._socket_watch = SocketWatch()
        self._socket_watch.dropped, self._socket_watch.reconnected = self._dropped, self._reconnected
        self._socket_watch.alive = self._alive
        self._dropped_at: float | None = None
        """When Socket Mode's connection was last seen lost (``monotonic``), until it is back."""
        self._alive_ahead = 0.0
        """How far ``clock`` was ahead of ``monotonic`` at the connection's last message (`_alive`)."""
        self._catch_up_run: asyncio.Future[None] | None = None
        self._catch_up_limits, self._clock, self._monotonic = catch_up, clock, monotonic
        self._taken_in = TakenIn()
        """How far each conversation was taken in, as recorded (`platforms.slack_seen`)."""
        self._retries = Retries(self._background)
        self._catch_up: CatchUp | None = None
        self._delivery = Delivery(sink=lambda: self._sink, stopping=lambda: self._stopping,
                                  turning_away=lambda: self._turning_away, catch_up=lambda: self._catch_up,
                                  taken_in=self._taken_in, under_way=self._under_way, retries=self._retries,
                                  sink_timeout=sink_timeout)

    def connection(self) -> ConnectionState:
        """``down`` while Slack refuses the bot token, else Socket Mode's connection
        (`platforms.slack_connection`); HTTP mode has none to watch."""
        if (refusal := self._bot_token_state.refusal) is not None:
            return refusal
        return self._socket_watch.state.state if self.mode == "socket" else NO_CONNECTION

    def pacing(self, chat_id: str) -> Pacing:
        """Slack: about one message a second per channel (a burst may be refused), so every call
        to a channel goes a second apart, placeholders counted (`bind_writes`); edits of one
        message too."""
        return PACING

    def measure(self, text: str) -> int:
        """Characters of the mrkdwn sent, or of the escaped Markdown (the plain fallback) if longer."""
        return max(len(slack_mrkdwn.render(text)), len(slack_mrkdwn.escape(text)))

    # -- connecting --------------------------------------------------------------------------

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Check the token (``auth.test``), whose answer authorizes every request bolt dispatches
        (`platforms.slack_app`) and lists the token's scopes (`platforms.slack_scopes`), then connect Socket Mode
        or get ready for HTTP events.
        Slash commands are declared in the app manifest, not registered here; ``commands`` only
        names the ``!name`` text forms accepted in threads, aliases included (``stop`` and ``new``
        by default)."""
        self._sink, self._stopping = functools.partial(self._unless_deleted, sink), False
        names = [name.lstrip("/") for c in commands for name in (c.name, *c.aliases)] or ["stop", "new"]
        self._text_commands = frozenset(f"!{n}" for n in names)
        proxy = proxy_for(self._api_base)  # for the Web API and the files alike: Slack's hosts
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._call_timeout), proxy=proxy)
        self._client = SlackWebClient(token=self._bot_token, base_url=self._api_base, session=self._session,
                                      retry_handlers=[], proxy=proxy)
        self._client.proxy = proxy  # None too: given None, slack-sdk took $HTTPS_PROXY, whatever $no_proxy says
        try:
            auth = await self._web.call("auth.test", None)
            slack_scopes.check(auth.headers)  # before any event is taken: chat:write missing stops the start
            self.bot_user_id = auth["user_id"]
            self._names.start(auth.headers, (auth["user_id"], str(auth.get("user") or "")))
            self._mention = re.compile(rf"[ \t]*<@{re.escape(auth['user_id'])}(?:\|[^>]*)?>[ \t]*")
            app = bolt_app(auth, bot_token=self._bot_token, base_url=self._api_base, session=self._session,
                           signing_secret=self._signing_secret, http=self.mode == "http")
            app.event({"type": "message", "subtype": "message_changed"})(self._on_changed)  # bolt runs the first match
            app.event({"type": "message", "subtype": "message_deleted"})(self._on_deleted)
            app.event("message")(self._on_message)
            app.command(re.compile(r"^/.+"))(self._on_command)
            app.event("tokens_revoked")(self._on_tokens_revoked)
            app.event("app_uninstalled")(self._on_app_uninstalled)
            for kind in slack_membership.EVENTS:
                app.event(kind)(self._on_membership)
            app.event("channel_id_changed")(self._on_channel_id_changed)
            app.event(re.compile(".*"))(_ignore)  # app_mention and the rest: ack, or Slack redelivers
            app.error(listener_failed)
            if self._taken_in.last_seen:  # before the first live event, which waits for it (`Delivery.deliver`)
                self._catch_up = self._new_catch_up(self._taken_in.last_seen)
            self._app = app
            if self.mode == "socket":
                await self._connect_socket()
        except BaseException:
            await self.stop()
            raise
        log.info("slack connected as %s over %s", self.bot_user_id, self.mode)
        if self._taken_in.last_seen and self._catch_up is not None:
            # Held by the catch-up alone, until it ends: every conversation of the last 30 days
            # (`gateway.retention`), which a busy workspace has many more of than it reads.
            self._taken_in.last_seen = {}
            self._catch_up_run = self._background(self._catch_up.run())

    def _new_catch_up(self, last_seen: dict[Where, str], **options: Any) -> CatchUp:
        return CatchUp(self._reads, self._moves.conversations(last_seen), take=self._take, seen=self._taken_in.mark,
                       token=self._bot_token_state, addressed=lambda event: self._addressed(event) is not None,
                       limits=self._catch_up_limits, clock=self._clock, monotonic=self._monotonic, **options)

    def _alive(self) -> None:
        self._alive_ahead = self._clock() - self._monotonic()

    def _dropped(self) -> None:
        self._dropped_at = self._monotonic()

    def _reconnected(self) -> None:
        """Socket Mode is back: after an outage of `Limits.after_outage` or more, Slack may have dropped the
        events it could not deliver meanwhile, so the conversations taken in are read after their newest
        message taken in, as at start (`platforms.slack_catchup`), the live messages there waiting for it.
        Called before the new connection's events are handed on. A catch-up still running (at start, or after
        an earlier outage) is replaced: the conversations it had still to read are read by this one."""
        dropped, self._dropped_at = self._dropped_at, None
        if dropped is None or self._turning_away:
            return
        # On the monotonic clock, which a wall clock stepped back cannot shorten, plus the time the machine slept
        # since the connection's last message (the wall clock ran ahead that far; the monotonic one stood still).
        # A laptop asleep overnight hears of the drop only on waking: seconds long, it caught nothing up.
        asleep = max(0.0, self._clock() - self._monotonic() - self._alive_ahead)
        outage = self._monotonic() - dropped + asleep
        if outage < self._catch_up_limits.after_outage:
            return
        earlier, running = self._catch_up, self._catch_up_run
        last_seen = self._taken_in.recorded()
        for where, ts in (earlier.pending().items() if earlier is not None else ()):
            if where not in last_seen or ts_key(ts) < ts_key(last_seen[where]):
                last_seen[where] = ts
        if not last_seen:
            return
        self._catch_up = self._new_catch_up(
            last_seen, after=f"Socket Mode was lost for {outage:.0f} s",
            behind=earlier.behind | set(earlier.reading) if earlier is not None else frozenset())
        self._catch_up_run = self._background(self._after(running, self._catch_up))

    @staticmethod
    async def _after(running: asyncio.Future[None] | None, catch_up: CatchUp) -> None:
        """``catch_up`` once the one ``running`` has ended, cancelled: it records how far it got before this
        one reads on from there, and lets the live messages that waited for it go."""
        if running is not None and not running.done():
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        await catch_up.run()

    async def _connect_socket(self) -> None:
        assert self._app is not None and self._client is not None
        # Kept before connecting, so that a failed start's `stop` closes it.
        self._socket = slack_socket.handler(self._app, self._socket_watch, app_token=self._app_token,
                                            ping_interval=self._ping_interval, token=self._bot_token,
                                            base_url=self._api_base, session=self._session)
        await slack_socket.connect(self._socket, self._socket_watch, self._web.call, app_token=self._app_token,
                                   timeout=self._connect_timeout)

    async def stop(self) -> None:
        """`stop_within` `STOP_SECONDS`, then `close`. Idempotent."""
        try:
            await self.stop_within(STOP_SECONDS)
        finally:
            await self.close()

    async def stop_within(self, seconds: float) -> None:
        """Take nothing more: disconnect, delete any progress placeholder still shown (none is posted
        after it). Events and commands still being read are dropped unacked (Slack sends an event again,
        to the next process). A command being handed over gets what is left of ``seconds`` to be recorded:
        the gateway's sink records it first, then routes it, so one cut off there is answered after the next
        start: its user is told it may be, not that it was not taken (`Handing`). One not handed
        over yet (or that the store refuses once the stop began) is answered to be sent again. Closing Socket
        Mode's WebSocket, before, gets what is left of ``seconds``, at least `LAST_CALLS_FLOOR`
        (`last_calls_time`): a close Slack does not answer is cut, the connection dropped. Then the deletions
        and the answers, side by side, share what is left of ``seconds``, at least the floor, never past the
        floor after ``seconds``: a placeholder not deleted by then is left to the next start
        (`bind_indicators_left`), an answer Slack has not taken is given up. The Web API client and the HTTP
        session stay open for the replies of the turns still ending, until `close`. Idempotent."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        self._stopping = True
        if self._socket is not None:
            socket, self._socket = self._socket, None
            await slack_socket.close(socket, last_calls_time(deadline, loop.time()))
        under_way = self._under_way
        if under_way.commands:  # before their listeners are cancelled: in HTTP mode, those answer Slack 200 once done
            await asyncio.wait(set(under_way.commands), timeout=max(deadline - loop.time(), 0))
        await under_way.cancel_listeners()
        await under_way.cancel_background()
        # One floor for the deletions and the answers: side by side, neither costs the other its time, and a
        # Slack that answers neither holds the stop one floor past ``seconds``, not two.
        ends = loop.time() + last_calls_time(deadline, loop.time())
        listening = under_way.other_listeners()
        await asyncio.gather(self._progress.stop(ends - loop.time()),
                             under_way.tell_not_taken(self._word, listening, ends))
        self._app = None  # HTTP mode: no new listener; those started meanwhile refuse their work (`Delivery.deliver`)
        await asyncio.gather(*under_way.other_listeners(), return_exceptions=True)
        self._sink = None

    async def close(self) -> None:
        """Close the Web API client and the HTTP session `stop_within` left open for sending: every call
        from now on raises `NetworkError` ("slack adapter not started"). Idempotent."""
        self._client = None
        await self._membership.close()
        # The stop ended the background tasks and starts none: any left ends before its session, as does an
        # answer the stop waited for in vain (or that no stop came before: `UnderWay.telling`).
        await self._under_way.cancel_background(answers=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    def web_routes(self) -> Sequence[Any]:
        if self.mode != "http":
            return []
        return self._events.routes()

    # -- inbound -----------------------------------------------------------------------------

    async def _on_message(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """A message the bot takes holds its conversations' record just before it from the moment it
        comes (`platforms.slack_seen`), its files still to be read: a later one there, taken meanwhile,
        must not be recorded past it, or a stop or a crash before it is taken would leave it behind the
        record, lost to the next start's catch-up once Slack gives up sending it again."""
        with self._under_way.listener():
            event = self._latest_edits.as_edited(self._moves.inbound(event))  # its edit may have come first
            addressed = self._addressed(event)
            if addressed is None:
                return
            if self._latest_edits.gone(event):  # its deletion came first: never answered, as if deleted waiting
                log.info("slack: message %s:%s came after its deletion; not handed over", event["channel"],
                         event["ts"])
                return
            ts, conversations = event["ts"], self._conversations(event, addressed)
            if self._turning_away:
                # Before its files are read: a stop's client may be closed already.
                self._taken_in.not_taken(conversations, ts, told=True)
                raise Stopping(f"slack adapter stopping: {event['channel']}:{ts} left for Slack to send again")
            arrived = _arrived()
            self._membership.back(event["channel"])  # someone writes there, to the bot: it is in the channel
            self._progress.reopened(event["channel"])
            self._taken_in.handing_on(conversations, ts)
            # One that mentions users may wait for their names (`platforms.slack_names`): the next message there
            # waits for it, else a follow-up without mentions overtook it. Not one reading its files alone: a Slack
            # Connect file's details may take the whole ack's time, and the next message goes on meanwhile, as ever.
            channel, users = event["channel"], mentioned(event)
            earlier, read = self._reading.get(channel), asyncio.get_running_loop().create_future() if users else None
            if read is not None:
                self._reading[channel] = read
            try:
                attachments = await self._attachments(event)
                names = await self._names.of(users, arrived)  # never fails: a mention not named stays as written
                if earlier is not None and not earlier.done():  # an earlier message there still waits for names
                    wait = arrived + slack_names.ACK_BUDGET - asyncio.get_running_loop().time()
                    await asyncio.wait({earlier}, timeout=max(wait, 0.0))
            except asyncio.CancelledError:  # a stop
                self._taken_in.not_taken(conversations, ts)
                raise
            except Exception:  # unacknowledged: Slack sends it again
                self._taken_in.sent_again(conversations, ts)
                raise
            finally:
                # Let the next message of the channel go once this one's hand-over has begun (`Delivery.deliver`
                # starts it before its first await): handed over in the order they came, not as their reads end.
                if read is not None:
                    asyncio.get_running_loop().call_soon(read.set_result, None)
                    if self._reading.get(channel) is read:
                        del self._reading[channel]
            # An edit that came while it waited for names or files was not the gateway's to take (it had no such
            # message yet) and was kept: handed over with no await between, so none comes in between unkept.
            if (later := self._latest_edits.as_edited(event)) is not event:
                event, addressed = later, self._addressed(later) or addressed
            taken = taken_of(self.name, event, addressed, attachments, conversations, names)
            try:
                # Reading a Slack Connect file's details took part of the time the ack may wait.
                await self._delivery.deliver(taken.inbound, taken, arrived=arrived)
            except Stopping:
                raise
            except Exception as exc:  # told by `Delivery.settled`, traceback and all
                raise SentAgain(taken.inbound.event_id) from exc

    async def _unless_deleted(self, sink: InboundSink, inbound: Inbound) -> Accepted | None:
        """Hand ``inbound`` to ``sink`` unless its deletion came first (`LatestEdits.gone`, marked as it comes): one
        that came while the message still waited here (for its mentions' names, its files, the catch-up), before the
        gateway had it, or that still waits for its chat there. Checked with no await before the sink takes it in its
        chat's order, so a later deletion finds it there."""
        if not inbound.is_command and inbound.message_id is not None \
                and self._latest_edits.gone({"channel": inbound.chat_id, "ts": inbound.message_id}):
            log.info("slack: message %s was deleted before the gateway had it; not handed over", inbound.event_id)
            return None
        return await sink(inbound)

    async def _on_changed(self, event: dict[str, Any]) -> None:
        """A message was changed (``message_changed``): a user's edit of a message the bot takes goes to the
        gateway, which answers the new text if the message still waits for its turn. One that no longer
        addresses the bot (its mention taken out at a channel's top level) is not handed over, as a message
        would not be, nor is one older than an edit heard already (sent again by Slack after it). Not acked during
        a stop: Slack sends it again, to the next process."""
        if slack_edits.deleted_message(event) is not None:  # a thread's parent deleted, kept as a tombstone
            await self._on_deleted(event)
            return
        with self._under_way.listener():
            event = self._moves.inbound(event)
            message, edited = slack_edits.edited_message(event), self._edits
            if message is None or edited is None:
                return
            # Before it is heard: an earlier edit still waiting for its names must not be handed over after it.
            came = _arrived()
            names = await self._names.of(mentioned(message), came) if self._addressed(message) is not None else {}
            if self._latest_edits.outdated(message):  # sent again after a later edit (`slack_edits.LatestEdits`)
                log.debug("slack: an edit of message %s:%s came after a later one; passed over", event["channel"],
                          message["ts"])
                return
            # Heard as it comes, not once handed over: an earlier edit Slack sends again while this one is handed
            # over (both answers slow) would reach the gateway after it, and undo it.
            self._latest_edits.heard(message)
            addressed = self._addressed(message)
            if addressed is None:
                log.debug("slack: an edit of message %s:%s is not for the bot", event["channel"], message["ts"])
                return
            if self._turning_away:
                raise Stopping(f"slack adapter stopping: the edit of {event['channel']}:{message['ts']} left for"
                               " Slack to send again")
            self._latest_edits.handing_over(message)  # for the next process too: Slack may send it an older one
            if not await edited(self.name, message["channel"], addressed.thread, message["ts"],
                                text_of(message, addressed, names)):
                self._latest_edits.kept(message)  # the message itself may come later (`LatestEdits.as_edited`)

    async def _on_deleted(self, event: dict[str, Any]) -> None:
        """A user deleted their message (``message_deleted``, or its tombstone): the gateway drops it if it still
        waits for its turn, in the conversation it was handed over in, whether or not it was for the bot (one that
        was not waits nowhere). Not acked during a stop: Slack sends it again, to the next process."""
        with self._under_way.listener():
            event = self._moves.inbound(event)
            message, deleted = slack_edits.deleted_message(event), self._deletions
            if message is None or deleted is None:
                return
            channel, ts = message["channel"], message["ts"]
            if self._turning_away:
                raise Stopping(f"slack adapter stopping: the deletion of {channel}:{ts} left for Slack to send again")
            private = message.get("channel_type") == "im" or channel.startswith("D")  # as `slack_addressed` reads it
            # Before the gateway is asked, which may wait for the chat: the message, handed over meanwhile from
            # here, must not pass `_unless_deleted` and wait behind a deletion that then finds nothing.
            self._latest_edits.deleted_first(message)  # the message itself may come later
            await deleted(self.name, channel, None if private else message.get("thread_ts") or ts, ts)

    @property
    def _turning_away(self) -> bool:
        """Whether nothing new is handed over: the adapter stops (or has not started)."""
        return self._sink is None or self._stopping

    def _addressed(self, event: dict[str, Any]) -> Addressed | None:
        """How the bot takes a message (`platforms.slack_addressed`)."""
        return addressed(event, self.bot_user_id, self._mention, threads=self._threads,
                         text_commands=self._text_commands)

    def _conversations(self, event: dict[str, Any], addressed: Addressed) -> tuple[Where, ...]:
        """Where the message becomes the newest taken in (`platforms.slack_inbound.conversations_of`), the
        thread a mention puts the bot in remembered first."""
        if addressed.thread is not None and addressed.mentioned:
            brought = self._threads.get((event["channel"], addressed.thread), frozenset())
            self._remember(event["channel"], addressed.thread, None if brought is None else brought | {event["user"]})
        return conversations_of(event, addressed, threads=self._threads)

    async def _inbound(self, event: dict[str, Any]) -> Taken | None:
        """The message as the gateway takes it (`platforms.slack_inbound`), if the bot takes it."""
        addressed = self._addressed(event)
        if addressed is None:
            return None
        conversations = self._conversations(event, addressed)
        attachments = await self._attachments(event)
        return taken_of(self.name, event, addressed, attachments, conversations,
                        await self._names.of(mentioned(event)))

    async def _attachments(self, event: dict[str, Any]) -> tuple[Attachment, ...]:
        files = slack_files.listed_files(event)
        if not files:
            return ()
        # `described` says what became of a file it could not describe: one warning, not the call's too.
        channel = event.get("channel")
        files = await slack_files.described(files, lambda file_id: self._web.call(
            "files.info", channel, file=file_id, caller_logs=True))
        return slack_files.attachments_of({"files": files})

    async def _on_tokens_revoked(self, event: dict[str, Any]) -> None:
        if (event.get("tokens") or {}).get("bot"):
            self._bot_token_state.refused("Slack's tokens_revoked event: the bot token was revoked")

    async def _on_app_uninstalled(self) -> None:
        self._bot_token_state.refused("Slack's app_uninstalled event: the app was removed from the workspace")

    async def _on_membership(self, event: dict[str, Any]) -> None:
        """The bot removed from a channel, or the channel archived or deleted, stops the channel's work; added
        back or unarchived, the channel's next message is answered as any (`platforms.slack_membership`)."""
        event = self._moves.inbound(event)
        self._membership.heard(event, self.bot_user_id)
        if (said := slack_membership.change(event, self.bot_user_id)) is not None and said[1] is None:
            self._progress.reopened(said[0])  # a placeholder Slack refused to delete there meanwhile goes now

    async def _on_channel_id_changed(self, event: dict[str, Any]) -> None:
        """A channel got a new id: stored by the gateway, then used (`platforms.slack_moves`); unacknowledged if
        the store refuses it, for Slack to send it again."""
        with self._under_way.listener():
            await self._moves.changed(event)

    async def _on_command(self, ack: Callable[..., Awaitable[Any]], body: dict[str, Any]) -> None:
        arrived = _arrived()
        inbound = slack_commands.inbound_of(self.name, self._moves.inbound(body, "channel_id"))
        with self._under_way.listener():
            if self._turning_away and self.mode == "http":
                # Told in the acknowledgement itself: no Web API call (the stop may have closed its client
                # already), and no later than the stop's other answers, however late it came in. In Socket
                # Mode the stop closed the socket such an acknowledgement would go by: `Delivery.deliver` keeps it
                # for the stop's answers, which come after every listener has ended.
                await ack(text=slack_commands.not_taken(inbound))
                return
            await self._delivery.deliver(inbound, arrived=arrived)
            if not (self._stopping and self.mode == "socket") and self._under_way.not_handled_in_ack(inbound):
                # The gateway failed on it (`UnderWay.command_settled`): said in the acknowledgement, which no stop
                # cancels as it did the answer sent apart. Not over a socket the stop closed: the stop answers it.
                await ack(text=slack_commands.not_handled(inbound))
                return
            # Sent by bolt once this returns (``process_before_response``): after the gateway has recorded the
            # command, or ``sink_timeout`` after it came (`Delivery.deliver`), within Slack's 3 s. Slack never sends
            # a command again: acknowledged before it was recorded, one a crash then cut off would be lost unseen.
            await ack()

    def bind_last_seen(self, last_seen: Mapping[str, str], seen: SeenRecorder, stored: SeenLookup) -> None:
        """The conversations' records, and beside them the latest edit of each message handed over
        (`slack_edits.LatestEdits.bind`), read back only when an edit of the message comes."""
        self._taken_in.bind({key: ts for key, ts in last_seen.items() if not key.startswith(slack_edits.EDITED)},
                            seen, stored)
        self._latest_edits.bind(seen, stored)

    def bind_edits(self, edited: MessageEdited) -> None:
        """Where a user's edit of their message goes (`HearsEdits`)."""
        self._edits = edited

    def bind_deletions(self, deleted: MessageDeleted) -> None:
        """Where a user's deletion of their message goes (`HearsDeletions`)."""
        self._deletions = deleted

    def bind_chat_lost(self, lost: ChatLost) -> None:
        """Where the channels the bot can no longer write to go (`LosesChats`, `platforms.slack_membership`)."""
        self._membership.bind(lost)

    def bind_chat_moves(self, moves: Mapping[str, str], moved: ChatMoved) -> None:
        """The channels given a new id so far, and where to store the next moves (`MovesChats`,
        `platforms.slack_moves`)."""
        self._moves.bind(moves, moved)

    async def _take(self, event: dict[str, Any]) -> Sequence[Where]:
        """Hand on a message the catch-up read, as its live event would have been, until the gateway has
        it (`until_taken`, as a live one acknowledged: Slack will not send it); returns the conversations
        it is the newest message of."""
        taken = await self._inbound(event)
        if taken is None or self._sink is None:
            return ()
        if "edited" in event:  # read back as it reads now: an edit of it Slack sends again may be older
            self._latest_edits.handing_over(event)
        await until_taken(functools.partial(self._sink, taken.inbound), taken.inbound, lambda: True, READ_BACK)
        self._delivery.record_seen(taken)
        return taken.conversations

    def remember_threads(self, threads: Iterable[tuple[str, str]]) -> None:
        """Threads the bot was in before a restart (the gateway's stored thread sessions, most
        recent last): replies in them keep needing no mention."""
        for channel, thread_ts in threads:
            self._remember(channel, thread_ts)

    def _remember(self, channel: str, thread_ts: str, brought: frozenset[str] | None = None) -> None:
        self._threads[(channel, thread_ts)] = brought
        self._threads.move_to_end((channel, thread_ts))
        while len(self._threads) > _REMEMBERED_THREADS:
            self._threads.popitem(last=False)

    def refused(self, inbound: Inbound) -> None:
        """The gateway refused ``inbound``'s sender (`platforms.base.HearsRefusals`): a thread their mention
        brought the bot into is not its, unless an allowed user's mention did too or the bot has posted there.
        Else an allowed member's reply under a stranger's refused mention was answered, unaddressed."""
        if inbound.thread_id is None:
            return
        where = (inbound.chat_id, inbound.thread_id)
        brought = self._threads.get(where)
        if brought is None or inbound.user_id not in brought:
            return
        if brought == {inbound.user_id}:
            del self._threads[where]
        else:
            self._threads[where] = brought - {inbound.user_id}

    # -- outbound ----------------------------------------------------------------------------

    async def send(self, message: Outbound) -> Sent:
        if message.reply_token:
            return await self._answer(message)
        return await slack_posts.post(self._web, self._metadata, message, self._remember, self._message_limit)

    async def _answer(self, message: Outbound, *, once: bool = False) -> Sent:
        if message.reply_token:  # a stop cutting the command's hand-over off says no more
            self._under_way.answering(message.reply_token)
        return await slack_commands.answer(message, self._session, self._web.formatted, self._message_limit,
                                           once=once)

    async def _word(self, message: Outbound) -> Sent:
        """The adapter's own word to a slash command (`slack_commands.tell`: not taken, may be answered, could not
        be handled), which nothing journals nor sends again: tried while the workspace's message limit holds the
        posts (`MessageLimit.posting`), or its user would never hear what became of the command."""
        return await self._answer(message, once=True)

    def answers_privately(self, reply_token: str) -> bool:
        """Every answer through a reply token, a slash command's, is ephemeral (`platforms.slack_commands`): the
        outbox journals it as for the command's user alone (`platforms.base.Outbound.private`), so a long one
        ends in a note rather than an ``answer.md`` shared in the channel (`gateway.long_messages`), and a note
        ahead of it goes to that user alone too (`gateway.part_notes.late_note`)."""
        return True

    async def find_sent(self, message: Outbound, since: float) -> str | None:
        """The ``ts`` of the message posted with this key since ``since`` (`platforms.slack_history.find_sent`)."""
        pages = 0

        async def read(chat_id: str, thread_id: str | None, **kw: Any) -> tuple[list[dict[str, Any]], str | None]:
            nonlocal pages
            pages += 1  # the first read is the outbox's lookup, which it counted; the others take turns here
            return await (self._page if pages == 1 else self._reads)(chat_id, thread_id, **kw)

        return await slack_history.find_sent(read, message, since)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """chat.update (`platforms.slack_posts`). Ephemeral messages cannot be edited."""
        await slack_posts.edit(self._web, chat_id, message_id, text, self._stuck_edits)

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        """chat.delete; a message already gone counts as deleted. Ephemeral answers cannot be deleted."""
        await slack_posts.delete(self._web, chat_id, message_id)

    def upload_limit(self, chat_id: str) -> int:
        return slack_uploads.UPLOAD_LIMIT

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Share the file in the channel or thread (`platforms.slack_uploads`), the caption rendered
        as mrkdwn like a post; the message id is the file's id. A failed upload step answering
        5xx or 429 is retried like a post; one refused for the bot token makes the platform ``down``
        as a post does (`WebApi.share`). Refused for a slash command's answer (``reply_token``), which is for its
        user alone, as a shared file is not: the outbox journals none (`answers_privately`), but one an older
        version journaled may still wait."""
        if message.reply_token:
            raise BadRequest("a file answering a slash command would be shared with the whole channel",
                             method=slack_uploads.METHOD, chat_id=message.chat_id, platform=self.name)
        with (self._message_limit.posting(slack_uploads.METHOD, message.chat_id),
              slack_posts.posting_in(message, self._remember)):
            return await self._web.share(message, file)

    async def download(self, attachment: Attachment) -> bytes:
        """files.info, then ``url_private`` with the bot token, stopped past ``max_attachment_bytes``."""
        if self._session is None:
            raise NetworkError("slack adapter not started", method="files.info")
        return await slack_files.download(
            lambda file_id: self._web.call("files.info", None, file=file_id, caller_logs=True),
            self._session, self._bot_token, attachment, self.max_attachment_bytes)

    # -- progress placeholder (`platforms.slack_placeholders`) -----------------------------------

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        await self._progress.typing(chat_id, thread_id)

    def bind_writes(self, wrote: Callable[..., None]) -> None:
        self._reads.wrote = wrote
        self._progress.bind_writes(wrote)

    def bind_turns(self, turn: Callable[..., Awaitable[None]]) -> None:
        self._reads.turn = turn
        self._progress.bind_turns(turn)

    async def _page(
        self, chat_id: str, thread_id: str | None, *, cursor: str | None = None, **kw: Any
    ) -> tuple[list[dict[str, Any]], str | None]:
        return await slack_history.page(self._web.call, chat_id, thread_id, cursor=cursor, **kw)

    def bind_indicators_left(self, left: IndicatorLeft) -> None:
        self._progress.bind_indicators_left(left)

    async def clear_left_behind(self, chat_id: str, thread_id: str | None) -> int:
        return await self._progress.clear_left_behind(chat_id, thread_id)

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        await self._progress.idle(chat_id, thread_id)


def _arrived() -> float:
    """When the request a listener runs for came (the event loop's clock): over HTTP, before it waited
    its turn to have its signature checked (`platforms.unsigned_bodies`); over Socket Mode, now, as
    slack_sdk hands each request to bolt as it comes."""
    came = unsigned_bodies.arrived()
    return asyncio.get_running_loop().time() if came is None else came


async def _ignore() -> None:
    return None

