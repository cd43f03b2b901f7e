"""A loopback fake of Discord's REST API and gateway, for tests and offline plugin development.

The real discord.py client talks to it over real HTTP and a real WebSocket::

    async with FakeDiscord() as fake:
        adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory)
        await adapter.start(sink)
        fake.push_dm(user=42, text="hello")
        await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(42)))

What it serves (under ``/api/v10``): gateway info, ``users/@me``, the application,
application commands (global and per guild), a channel (``GET /channels/{id}``, with its
``last_message_id``), one of its messages, its history (``GET /channels/{id}/messages`` with ``before``/``after``/``limit``,
newest first, at most 100, as Discord pages it), channel messages (create, edit,
delete; 2,000-character limit as 50035; a repeat of an enforced nonce within 5 minutes answered with the
first message, as Discord checks "the past few minutes", the history serving no nonce; whom each
message pings, as its ``allowed_mentions`` allows; a reply's ``message_reference`` to a message
not in the channel (never there, or deleted: `delete_message`) refused as 50035
MESSAGE_REFERENCE_UNKNOWN_MESSAGE, or with ``fail_if_not_exists: false`` sent as a plain message;
a reply kept as `FakeMessage.reply_to` and served as type 19 with ``referenced_message``),
typing, interaction callbacks and webhook follow-ups (3-second acknowledgement,
40060 when answered twice; fetch, edit and delete; after 15 minutes the token is refused
with 401 50027, as Discord does). Files users attach (``files=[Upload(...)]``
on `push_dm` and `push_guild_message`) are served from attachment URLs under
``/attachments/...``, like Discord's CDN, without a token; stickers (``stickers=[name]``) come as
``sticker_items``, as Discord sends them with or without the Message Content intent; a poll (``poll=``) as
``poll``, and embeds (``embeds=``, a bot's card a user forwards), withheld with the content. A reply where the bot
lacks Read Message History (`deny`) is refused with Discord's 403 160002. Files the bot uploads (a
message create or an interaction's follow-up as multipart, ``payload_json`` + ``files[n]``; an ephemeral
follow-up's, flag 64, for its user alone) are kept the same way, each at
most the guild's upload limit (10 MiB; more once `boost` raises its boost level), else 413 40005.
Every response is exactly ``application/json``: discord.py compares the content type for equality.
Channel kinds (`add_channel`): voice and stage text chats, announcement channels (type 10 threads), forum and
media channels (a post is a thread whose first message has its id; a message in the channel itself is refused,
50008); private threads (`push_guild_message(private_thread=True)`: heard once a mention adds the bot, with
THREAD_CREATE first), archived ones (`archive_thread`: not in a guild's threads; a message unarchives it,
THREAD_UPDATE first, the bot's post too; an edit there is refused, 400 50083) and locked ones (`lock_thread`: the
bot's posts, edits and typing refused 403 50083 unless it manages threads there; its post no longer unarchives).
Where the bot may write (`platforms.fakes._discord_membership`): `remove_bot` (``GUILD_DELETE``; every call naming
the guild's channels refused 403 Missing Access, 50001, until `add_bot`), `outage` (``GUILD_DELETE`` with
``unavailable: true``; `outage_over`), `block_dm` (the user's DM refuses posts 403, 50007), `remove_from_thread`
(``THREAD_MEMBERS_UPDATE``; a private thread then refuses calls 403, 50001, unless the bot manages threads in its
channel: `manage_threads`, ``CHANNEL_UPDATE``, or `make_admin`, ``GUILD_ROLE_UPDATE``), and
``deny(channel, "view_channel")`` (50001 there). A deleted thread (`delete_channel`: ``THREAD_DELETE``) answers 404
Unknown Channel, 10003.

The gateway (``/gateway``) speaks HELLO, heartbeat ACK, IDENTIFY → READY (then
GUILD_CREATE per known guild), RESUME → replay → RESUMED, and on demand op 7
RECONNECT, op 9 INVALID_SESSION, a dropped socket, a half-open one (`stall`), and close 4014 when the
Message Content intent is requested but not enabled. Every connected session hears every event, as
on Discord: two clients logged in with one token (two gateways) each get each message. A new
session hears nothing from before its READY: what is said while no session is valid (before the
first IDENTIFY, or after an INVALID_SESSION until the next READY) is only in the channel's history.

Scripted failures: `fail_next` (429 with ``retry_after`` and the ``Via`` header
discord.py needs to retry, or any status and error code), and `hold` (a route's calls left
unanswered until the test releases them). Discord's rate limits, off until
`enforce_rate_limits` turns them on: a bucket per channel route (5 per 5 s by default), the
``X-RateLimit-*`` headers on every answer, 429 with ``retry_after`` and ``global`` beyond
(`platforms.fakes._discord_limits`). Everything the bot
called is in `calls`; everything said in a channel is in `messages`.

Run it alone with ``python -m platforms.fakes.discord --port 8765``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aiohttp import web

# The constants, `Call` and `FakeMessage` were defined in this module before it was split; they
# stay importable from here (hence the noqa: some are only re-exported).
from platforms.fakes._discord_files import DiscordFiles, Upload
from platforms.fakes._discord_gateway import (  # noqa: F401
    APP_FLAG_MESSAGE_CONTENT,
    MESSAGE_CONTENT_INTENT,
    DiscordGateway,
    _Conn,
    _Session,
)
from platforms.fakes._discord_limits import GLOBAL, PER_CHANNEL_ROUTE, Clock, DiscordRateLimits, Window
from platforms.fakes._discord_membership import DiscordMembership
from platforms.fakes._discord_mentions import Pings, pings  # noqa: F401
from platforms.fakes._discord_model import (  # noqa: F401
    ANNOUNCEMENT,
    FLAG_LOADING,
    FORUM,
    ISO,
    MEDIA,
    STAGE,
    TEXT,
    THREAD_ONLY,
    VOICE,
    Call,
    DiscordModel,
    FakeMessage,
    _user,
)
from platforms.fakes._discord_rest import INTERACTION_ACK_SECONDS, TEXT_LIMIT, DiscordRest, _Failure  # noqa: F401
from platforms.fakes._waiting import wait_until

_DISCORD_EPOCH_MS = 1_420_070_400_000
"""2015-01-01 UTC, the zero of Discord's snowflake ids."""

class FakeDiscord(DiscordRest, DiscordGateway, DiscordModel, DiscordFiles, DiscordMembership):
    """Discord's REST API and gateway on 127.0.0.1; see the module docstring."""

    def __init__(
        self,
        *,
        token: str = "fake-discord-token",
        bot_name: str = "switchboard",
        host: str = "127.0.0.1",
        port: int = 0,
        heartbeat_interval: float = 0.5,
        message_content_intent: bool = True,
        strip_message_content: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``message_content_intent=False`` mimics the Developer Portal switch being off: the
        application's flags lack it and IDENTIFY asking for it is closed with 4014.
        ``strip_message_content=True`` delivers guild messages that do not mention the bot
        with empty content, as Discord does for an app without the intent. ``clock`` (seconds,
        monotonic) times interactions (the 3-second acknowledgement and the 15-minute token) and the 5 minutes
        an enforced nonce is checked for."""
        self.token, self.bot_name, self.host, self.port = token, bot_name, host, port
        self.heartbeat_interval = heartbeat_interval
        self.message_content_intent = message_content_intent
        self.strip_message_content = strip_message_content
        self.clock = clock
        self._last_id = 0
        self.bot_id = self.new_id()
        self.application_id = self.bot_id
        self.calls: list[Call] = []
        self.messages: defaultdict[str, list[FakeMessage]] = defaultdict(list)
        self.commands: dict[str | None, list[dict[str, Any]]] = {}
        """Registered application commands by guild id (None: global)."""
        self.interactions: dict[str, dict[str, Any]] = {}
        self.attachment_data: dict[str, bytes] = {}
        """The bytes of every file users attached, by attachment id."""
        self.downloads: list[str] = []
        """Attachment ids fetched from their URLs, in order."""
        self.gateway_ops: list[tuple[int, Any]] = []
        """Every op the client sent on the gateway (heartbeats included), with its data."""
        self.connections_opened = 0
        self.errors: list[Exception] = []
        """Exceptions raised inside the fake's own handlers (always a bug in the fake)."""
        self._guilds: dict[str, dict[str, Any]] = {}
        self._dm_channels: dict[str, str] = {}
        self._channels: set[str] = set()
        self._channel_guild: dict[str, str] = {}
        self._failures: list[_Failure] = []
        self.denied: defaultdict[str, set[str]] = defaultdict(set)
        """Permissions the bot lacks, by channel or thread (`deny`)."""
        self.removed_guilds: set[str] = set()
        """Guilds the bot was removed from (`remove_bot`)."""
        self.blocked_dms: set[str] = set()
        """DM channels whose user blocked the bot (`block_dm`)."""
        self.left_threads: set[str] = set()
        """Private threads the bot was removed from (`remove_from_thread`), until a mention adds it again."""
        self._holds: list[tuple[str, asyncio.Event]] = []
        self.rate_limits: DiscordRateLimits | None = None
        """Discord's rate limits, once `enforce_rate_limits` turned them on."""
        self._conns: set[_Conn] = set()
        self._session: _Session | None = None
        self._sessions: dict[str, _Session] = {}
        self._dispatched: dict[str, dict[str, Any]] = {}
        """Each MESSAGE_CREATE's data, by message id."""
        self._users: dict[str, dict[str, Any]] = {}
        """Each user as last seen posting with a ``name`` or ``global_name``, by id: whom a mention names."""
        self._replay: list[str] = []
        self._changed = asyncio.Event()
        self._sending: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self._closing = False
        """`close` has begun: the gateway takes no new connection, which the cleanup would wait for."""
        self._app = self._build_app()

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        self._runner = web.AppRunner(self._app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        self._closing = True
        for _route, release in self._holds:  # a held call is answered, so that the server can shut down
            release.set()
        for conn in list(self._conns):
            if conn.deaf and conn.request.transport is not None:
                conn.request.transport.abort()  # its close would wait for an answer it cannot read
            await conn.ws.close(code=1001)
        if self._sending:
            await asyncio.wait(self._sending)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.host}:{self.port}/gateway"

    @property
    def live_connections(self) -> int:
        return sum(1 for c in self._conns if not c.ws.closed)

    @staticmethod
    def client_factory(**options: Any) -> Any:
        """A discord.Client for tests: no 2 s wait for guilds before on_ready and no 5 s pause
        before a re-IDENTIFY (both guard real Discord, not this fake). Pass it as the adapter's
        ``client_factory``."""
        import discord

        from platforms import discord_urls  # noqa: F401  (imports discord.py without its audioop warning)

        class FastClient(discord.Client):
            async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
                return None

        options.setdefault("guild_ready_timeout", 0)
        return FastClient(**options)

    # ---- observing -------------------------------------------------------------------------------

    def new_id(self) -> str:
        """A snowflake as Discord makes them: milliseconds since 2015 in the high bits (discord.py
        reads a message's ``created_at`` from them), always greater than the last one made."""
        self._last_id = max(self._last_id + 1, (int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22)
        return str(self._last_id)

    def _touch(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Return the first truthy ``predicate()``, re-checked on every change to the fake (and
        every 20 ms, for conditions on other objects); TimeoutError after ``timeout`` seconds."""
        return await wait_until(predicate, timeout, changed=lambda: self._changed,
                                describe=lambda: f"; last calls: {self.calls[-5:]}")

    def bot_messages(self, channel_id: str | int) -> list[FakeMessage]:
        return [m for m in self.messages[str(channel_id)] if m.from_bot and not m.deleted]

    def calls_to(self, route: str) -> list[Call]:
        return [c for c in self.calls if c.route == route]

    def dm_channel(self, user: str | int) -> str:
        """The DM channel id with ``user`` (created on first use)."""
        user = str(user)
        if user not in self._dm_channels:
            self._dm_channels[user] = self.new_id()
            self._channels.add(self._dm_channels[user])
        return self._dm_channels[user]

    # ---- scripting -------------------------------------------------------------------------------

    def fail_next(
        self,
        route: str,
        status: int = 429,
        *,
        retry_after: float = 0.05,
        code: int | None = None,
        message: str | None = None,
        errors: dict[str, Any] | None = None,
        times: int = 1,
        drop: bool = False,
        after: bool = False,
        headers: dict[str, str] | None = None,
        text: str | None = None,
    ) -> None:
        """Make the next ``times`` calls to ``route`` fail. ``route`` is a template
        (``POST /channels/{channel_id}/messages``) or a concrete path (``POST /channels/12/messages``).
        ``drop``: the connection closes without any answer instead (a reset, a proxy timing out; aiohttp
        sends a GET once more on a new connection by itself, so it takes two to fail one). ``after``: the
        call is carried out first (a message is posted) and its answer is the failure all the same, as
        Discord's can be when it fails after storing (a call Discord refuses keeps its refusal).
        ``headers``: the answer's headers instead of Discord's (a 429 without ``Via`` and with a
        ``Retry-After`` of its own, as Cloudflare or a proxy in between answers); ``text``: a plain text
        body instead of Discord's JSON (``text/plain``, unless ``headers`` give a ``Content-Type``)."""
        self._failures.extend(_Failure(route, status, retry_after, code, message, errors, drop, after, headers, text)
                              for _ in range(times))

    def hold(self, route: str) -> asyncio.Event:
        """Make calls to ``route`` (as in `fail_next`) wait, recorded in `calls` but unanswered, until the
        returned event is set, as a Discord that is slow or never answers would (a scripted failure
        is played once it is set)."""
        release = asyncio.Event()
        self._holds.append((route, release))
        return release

    def enforce_rate_limits(self, window: Window = PER_CHANNEL_ROUTE, *, global_window: Window = GLOBAL,
                            clock: Clock | None = None) -> DiscordRateLimits:
        """Answer every ``/channels/{channel_id}/…`` request with Discord's ``X-RateLimit-*``
        headers and refuse one past its bucket (``window`` per route and channel, ``global_window``
        in all) with 429 as Discord does (`platforms.fakes._discord_limits`). ``clock``: the real
        one by default, which discord.py waits on too. Returns the `DiscordRateLimits`, also
        `rate_limits`, whose ``calls`` and ``refused`` record what it let through and refused."""
        self.rate_limits = DiscordRateLimits(clock or time, window, global_window)
        return self.rate_limits

    def request_reconnect(self) -> None:
        """Send op 7 RECONNECT: the client should close and RESUME."""
        self._send_to_live({"op": 7, "d": None})

    def invalidate_session(self, resumable: bool = False) -> None:
        """Send op 9 INVALID_SESSION; unless ``resumable``, the session cannot be resumed any more."""
        if not resumable and self._session is not None:
            self._session.valid = False
        self._send_to_live({"op": 9, "d": resumable})

    def drop_socket(self) -> None:
        """Cut the live gateway connection without a close frame, like a network failure."""
        for conn in list(self._conns):
            if conn.request.transport is not None:
                conn.request.transport.close()

    def stall(self, *, answer_close: bool = True) -> None:
        """Make the live gateway connection half-open, as when a NAT or load balancer forgets it:
        no close frame, no FIN, no heartbeat ACK and no dispatch reaches the client any more
        (events are still logged in the session, so a RESUME replays them). One thing still gets
        through: the close frame the client sends when it gives up is answered, sparing the 30 s
        discord.py would otherwise wait for that answer before it reconnects. ``answer_close``
        False: not even that, as when the peer is truly gone: nothing the client sends is read
        any more, and its close waits for an answer that never comes."""
        for conn in self._conns:
            conn.stalled = True
            if not answer_close and conn.request.transport is not None:
                conn.deaf = True
                conn.request.transport.pause_reading()

    def replay_on_resume(self, events: Iterable[str]) -> None:
        """On the next RESUME, dispatch these earlier events (message or interaction ids) again,
        as Discord sometimes does: the duplicates a gateway inbox must drop."""
        self._replay.extend(str(e) for e in events)

    def push_dm(self, user: str | int, text: str, *, name: str | None = None, global_name: str | None = None,
                files: Sequence[Upload] = (), forwarded: bool = False, stickers: Sequence[str] = (),
                poll: tuple[str, Sequence[str]] | None = None, embeds: Sequence[dict[str, Any]] = (),
                components: Sequence[dict[str, Any]] = ()) -> str:
        """A direct message from ``user`` (username ``name``, display name ``global_name``) to the
        bot, with ``files`` attached and the stickers named ``stickers`` (``sticker_items``);
        ``forwarded``: ``text``, ``files``, ``stickers`` and ``embeds`` are those of a message ``user`` forwarded,
        which Discord sends as an empty message with a snapshot of the forwarded one
        (``message_snapshots``); ``poll``: (question, answers), a poll ``user`` made; ``embeds``: Discord's embed
        objects (``{"title": …, "description": …, "fields": [{"name": …, "value": …}]}``), which only a bot's or
        a webhook's message holds without text, so mostly with ``forwarded``; ``components``: Discord's component
        objects, a bot's buttons or its display components (``{"type": 10, "content": …}``, a text display; a
        container, 17; a section, 9; a media gallery, 12; a file, 13), which a bot's message holds in place of
        text and embeds, so with ``forwarded`` too (flagged ``IS_COMPONENTS_V2`` when one is a display component).
        Returns the message id."""
        channel = self.dm_channel(user)
        data = self._message_payload(channel, str(user), name, text, uploads=files, global_name=global_name,
                                     forwarded=forwarded, stickers=stickers, poll=poll, embeds=embeds,
                                     components=components)
        return self._dispatch("MESSAGE_CREATE", data)["id"]

    def delete_message(self, channel: str | int, message_id: str | int) -> None:
        """Someone deletes a message (a user's own, or a moderator any): it is gone from the channel's
        history and replies to it, and the gateway sends MESSAGE_DELETE, as Discord does."""
        channel, message_id = str(channel), str(message_id)
        message = self._find(channel, message_id)
        if message is None:
            raise KeyError(f"no message {message_id} in channel {channel}")
        message.deleted = True
        guild = self._channel_guild.get(channel)
        self._dispatch("MESSAGE_DELETE", {"id": message_id, "channel_id": channel,
                                          **({"guild_id": guild} if guild is not None else {})})

    def delete_messages(self, channel: str | int, message_ids: Iterable[str | int]) -> None:
        """A moderator purges messages of a guild channel or thread at once: each is gone as with `delete_message`,
        and the gateway sends one MESSAGE_DELETE_BULK naming them all, as Discord does."""
        channel, ids = str(channel), [str(i) for i in message_ids]
        messages = [self._find(channel, i) for i in ids]
        if None in messages:
            raise KeyError(f"not every one of messages {ids} is in channel {channel}")
        for message in messages:
            message.deleted = True  # type: ignore[union-attr]
        self._dispatch("MESSAGE_DELETE_BULK", {"ids": ids, "channel_id": channel,
                                               "guild_id": self._channel_guild[channel]})

    def delete_channel(self, channel: str | int) -> None:
        """A moderator deletes a guild channel or a thread: every call naming it is 404 Unknown Channel from then
        on, and the gateway sends CHANNEL_DELETE (THREAD_DELETE), as Discord does."""
        channel = str(channel)
        guild = self._guilds[self._channel_guild[channel]]
        self._channels.discard(channel)
        if (data := guild["threads"].pop(channel, None)) is not None:
            self._dispatch("THREAD_DELETE", {k: data[k] for k in ("id", "guild_id", "parent_id", "type")})
        else:
            self._dispatch("CHANNEL_DELETE", guild["channels"].pop(channel))

    def edit_message(self, channel: str | int, message_id: str | int, text: str) -> None:
        """Someone edits their message: its history shows ``text`` (the earlier contents in ``edits``),
        and the gateway sends MESSAGE_UPDATE with the whole message, as Discord does: a user's as it was sent
        (its member, the message it replies to), whom it mentions worked out afresh from ``text``, which is
        withheld as a message's is (``strip_message_content``) unless it mentions the bot."""
        channel, message_id = str(channel), str(message_id)
        message = self._find(channel, message_id)
        if message is None:
            raise KeyError(f"no message {message_id} in channel {channel}")
        message.edits.append(message.content)
        message.content = text
        guild = self._channel_guild.get(channel)
        if message.from_bot:
            self._dispatch("MESSAGE_UPDATE", self._message_json(message, guild=guild))
            return
        named = pings(text, None)
        withheld = guild is not None and self.strip_message_content and self.bot_id not in named.users
        data = {**(self._dispatched.get(message_id) or self._message_json(message, guild=guild)),
                "content": "" if withheld else text, "edited_timestamp": ISO, "mention_everyone": named.everyone,
                "mentions": self._mentioned(text), "mention_roles": list(named.roles)}
        self._dispatched[message_id] = data  # the history serves it as edited
        self._dispatch("MESSAGE_UPDATE", data)

    def push_guild_message(
        self,
        guild: str | int,
        channel: str | int,
        user: str | int,
        text: str,
        mention_bot: bool = False,
        reply_to_bot: bool = False,
        thread_id: str | int | None = None,
        *,
        name: str | None = None,
        nick: str | None = None,
        thread_owner: str | int | None = None,
        files: Sequence[Upload] = (),
        mention_roles: Sequence[str] = (),
        forwarded: bool = False,
        stickers: Sequence[str] = (),
        private_thread: bool = False,
        poll: tuple[str, Sequence[str]] | None = None,
        embeds: Sequence[dict[str, Any]] = (),
        components: Sequence[dict[str, Any]] = (),
        reply_to: str | int | None = None,
    ) -> str:
        """A message in a guild channel (a text one unless `add_channel` made it), or in thread ``thread_id`` of
        that channel (owned by ``thread_owner``, default ``user``; pass `bot_id` for a bot's thread; made private
        with ``private_thread``: the bot hears nothing there until a mention adds it, announced with THREAD_CREATE
        and a RECIPIENT_ADD message; in an archived one, `archive_thread`, it unarchives the thread first); in a
        forum or media channel without ``thread_id``, the message opens a post, a thread of the message's id; from
        username ``name`` with the server nickname ``nick``, mentioning the roles ``mention_roles``
        (`bot_role`, `add_role`) before ``text``; ``forwarded``, ``stickers``, ``poll``, ``embeds`` and
        ``components`` as for `push_dm` (a forward neither mentions nor replies: ValueError with those options), the
        poll, embeds and components withheld with the content (``strip_message_content``), the stickers not;
        ``reply_to``: replying to that message of the channel (or thread), a user's or the bot's (KeyError for one
        not there), as ``reply_to_bot`` replies to the bot's last one. Unknown guilds, channels and threads are
        created and announced first."""
        if forwarded and (mention_bot or reply_to_bot or mention_roles or reply_to is not None):
            raise ValueError("a forwarded message carries no mention or reply of its own")
        guild, channel, user = str(guild), str(channel), str(user)
        self._ensure_channel(guild, channel)
        where, starter, hidden = channel, None, False
        if thread_id is None and self._guilds[guild]["channels"][channel]["type"] in THREAD_ONLY:
            thread_id = starter = self.new_id()  # a post and the message opening it share their id
        if thread_id is not None:
            where = str(thread_id)
            self._ensure_thread(guild, channel, where, str(thread_owner or user), private=private_thread)
            thread = self._guilds[guild]["threads"][where]
            if thread["thread_metadata"]["archived"]:
                self._set_archived(where, False)
            if not self._sees(thread) and mention_bot:
                self._join_thread(guild, where)
                added = self._message_json(self._store(where, user, "", from_bot=False), guild=guild)
                added |= {"type": 7, "mentions": [_user(self.bot_id, self.bot_name, bot=True)]}  # RECIPIENT_ADD
                self._dispatch("MESSAGE_CREATE", added)
            hidden = not self._sees(thread)
        mentions_bot = mention_bot
        text = "".join(f"<@&{role}> " for role in mention_roles) + text
        said = content = f"<@{self.bot_id}> {text}" if mention_bot else text
        if self.strip_message_content and not mentions_bot:
            content, poll, embeds, components = "", None, (), ()  # withheld with the content, as Discord does
        data = self._message_payload(where, user, name, content, guild=guild, uploads=files, nick=nick,
                                     forwarded=forwarded, stickers=stickers, message_id=starter, poll=poll,
                                     embeds=embeds, components=components)
        if not forwarded:  # whom it names comes with the content withheld too
            data["mentions"], data["mention_roles"] = self._mentioned(said), list(pings(said, None).roles)
        if reply_to is not None:
            if (target := self._find(where, str(reply_to))) is None:
                raise KeyError(f"no message {reply_to} in channel {where}")
            data["type"] = 19  # the message replied to as the channel's history serves it, as Discord sends it
            data["message_reference"] = {"message_id": target.id, "channel_id": where, "guild_id": guild}
            data["referenced_message"] = {k: v for k, v in self._history_json(target).items()
                                          if k != "referenced_message"}
        elif reply_to_bot:
            earlier = self.bot_messages(where)
            target = earlier[-1] if earlier else self._store(where, self.bot_id, "(earlier reply)", from_bot=True)
            data["type"] = 19
            data["message_reference"] = {"message_id": target.id, "channel_id": where, "guild_id": guild}
            data["referenced_message"] = self._message_json(target, guild=guild)
        if hidden:  # a private thread the bot is not in: only in the history
            self._dispatched[data["id"]] = data
            return str(data["id"])
        return self._dispatch("MESSAGE_CREATE", data)["id"]

    def push_interaction(
        self, name: str, user: str | int, channel: str | int | None = None, guild: str | int | None = None,
        *, args: str | None = None,
    ) -> str:
        """A slash command ``/name`` from ``user``; in a DM when ``guild`` is None (``channel``
        then defaults to the DM channel); ``channel`` may be a thread `push_guild_message` made. The users,
        roles and channels ``args`` mentions come with it, as Discord resolves them (`_resolved`). Returns
        the interaction id."""
        user = str(user)
        interaction_id, token = self.new_id(), f"itoken-{self.new_id()}"
        scope = str(guild) if guild is not None else None
        registered = {c["name"]: c for c in self.commands.get(scope, [])}
        command = registered.get(name) or {c["name"]: c for c in self.commands.get(None, [])}.get(name)
        data: dict[str, Any] = {
            "id": command["id"] if command else self.new_id(), "name": name, "type": 1,
            "options": [{"name": "args", "type": 3, "value": args}] if args else [],
        }
        if command and command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        if resolved := self._resolved(args or "", str(guild) if guild is not None else None):
            data["resolved"] = resolved
        payload: dict[str, Any] = {
            "id": interaction_id, "application_id": self.application_id, "type": 2, "token": token,
            "version": 1, "locale": "en-US", "app_permissions": "0", "entitlements": [],
            "attachment_size_limit": 10_485_760, "data": data,
        }
        if guild is None:
            channel_id = str(channel) if channel is not None else self.dm_channel(user)
            payload |= {"user": _user(user), "channel": {"id": channel_id, "type": 1}, "context": 1,
                        "authorizing_integration_owners": {"1": user}}
        else:
            channel_id = str(channel)
            threads = self._guilds[str(guild)]["threads"] if str(guild) in self._guilds else {}
            if channel_id not in threads:  # in a thread, Discord sends the thread as the interaction's channel
                self._ensure_channel(str(guild), channel_id)
            payload |= {
                "guild_id": str(guild), "guild_locale": "en-US", "context": 0,
                "authorizing_integration_owners": {"0": str(guild)},
                "guild": {"id": str(guild), "locale": "en-US", "features": []},
                "member": {"user": _user(user), "roles": [], "joined_at": ISO, "deaf": False, "mute": False,
                           "flags": 0, "permissions": "2248473465835073"},
                "channel": threads.get(channel_id) or self._guilds[str(guild)]["channels"][channel_id],
            }
        payload["channel_id"] = channel_id
        self.interactions[interaction_id] = {
            "token": token, "channel_id": channel_id, "created": self.clock(), "responses": [],
            "original": None, "user": _user(user), "owners": payload["authorizing_integration_owners"],
        }
        self._dispatch("INTERACTION_CREATE", payload)
        return interaction_id


async def _serve(host: str, port: int, token: str) -> None:
    async with FakeDiscord(host=host, port=port, token=token, heartbeat_interval=41.25) as fake:
        print(f"Fake Discord on {fake.url}")
        print(f"  api_base:    {fake.api_base}")
        print(f"  gateway_url: {fake.gateway_url}")
        print(f"  token:       {fake.token}")
        print(f"  bot user id: {fake.bot_id}")
        print("Ctrl-C to stop.", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m platforms.fakes.discord", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", default="fake-discord-token")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.host, args.port, args.token))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
