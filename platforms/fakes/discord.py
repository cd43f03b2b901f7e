"""A loopback fake of Discord's REST API and gateway, for tests and offline plugin development.

The real discord.py client talks to it over real HTTP and a real WebSocket::

    async with FakeDiscord() as fake:
        adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory)
        await adapter.start(sink)
        fake.push_dm(user=42, text="hello")
        await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(42)))

What it serves (under ``/api/v10``): gateway info, ``users/@me``, the application,
application commands (global and per guild), channel messages (create, edit,
delete; 2,000-character limit as 50035; nonces deduplicated when enforced),
typing, interaction callbacks and webhook follow-ups (3-second acknowledgement,
40060 when answered twice). Every response is exactly ``application/json``:
discord.py compares the content type for equality.

The gateway (``/gateway``) speaks HELLO, heartbeat ACK, IDENTIFY → READY (then
GUILD_CREATE per known guild), RESUME → replay → RESUMED, and on demand op 7
RECONNECT, op 9 INVALID_SESSION, a dropped socket, and close 4014 when the
Message Content intent is requested but not enabled.

Scripted failures: `fail_next` (429 with ``retry_after`` and the ``Via`` header
discord.py needs to retry, or any status and error code). Everything the bot
called is in `calls`; everything said in a channel is in `messages`.

Run it alone with ``python -m platforms.fakes.discord --port 8765``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import WSMsgType, web
from platforms.fakes._waiting import wait_until

T = TypeVar("T")
MESSAGE_CONTENT_INTENT = 1 << 15
APP_FLAG_MESSAGE_CONTENT = 1 << 18
FLAG_LOADING = 128
TEXT_LIMIT = 2000
INTERACTION_ACK_SECONDS = 3.0
ISO = "2026-01-01T00:00:00.000000+00:00"


@dataclass
class Call:
    """One REST request the bot made."""

    method: str
    route: str
    """The route template, e.g. ``POST /channels/{channel_id}/messages``."""
    path: str
    body: Any
    query: dict[str, str]
    headers: dict[str, str]
    status: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class FakeMessage:
    id: str
    channel_id: str
    author_id: str
    content: str
    from_bot: bool
    flags: int = 0
    nonce: str | None = None
    edits: list[str] = field(default_factory=list)
    """Earlier contents, oldest first; `content` is the current one."""
    deleted: bool = False
    interaction_id: str | None = None


@dataclass
class _Failure:
    route: str
    status: int
    retry_after: float
    code: int | None
    message: str | None
    errors: dict[str, Any] | None


@dataclass
class _Session:
    id: str
    seq: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    conn: _Conn | None = None
    valid: bool = True


@dataclass(eq=False)
class _Conn:
    ws: web.WebSocketResponse
    request: web.Request
    session: _Session | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Frames go out in the order they were dispatched (asyncio locks are FIFO)."""


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly `application/json`, never with a charset: discord.py compares for equality.
    return web.Response(
        status=status, body=json.dumps(data).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )


def _error(status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return _json(body, status)


def _user(user_id: str, name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
    name = name or f"user{user_id}"
    return {"id": user_id, "username": name, "global_name": name, "discriminator": "0", "avatar": None, "bot": bot}


class FakeDiscord:
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
    ) -> None:
        """``message_content_intent=False`` mimics the Developer Portal switch being off: the
        application's flags lack it and IDENTIFY asking for it is closed with 4014.
        ``strip_message_content=True`` delivers guild messages that do not mention the bot
        with empty content, as Discord does for an app without the intent."""
        self.token, self.bot_name, self.host, self.port = token, bot_name, host, port
        self.heartbeat_interval = heartbeat_interval
        self.message_content_intent = message_content_intent
        self.strip_message_content = strip_message_content
        self._ids = itertools.count(1_300_000_000_000_000_000)
        self.bot_id = self.new_id()
        self.application_id = self.bot_id
        self.calls: list[Call] = []
        self.messages: defaultdict[str, list[FakeMessage]] = defaultdict(list)
        self.commands: dict[str | None, list[dict[str, Any]]] = {}
        """Registered application commands by guild id (None: global)."""
        self.interactions: dict[str, dict[str, Any]] = {}
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
        self._conns: set[_Conn] = set()
        self._session: _Session | None = None
        self._sessions: dict[str, _Session] = {}
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._replay: list[str] = []
        self._changed = asyncio.Event()
        self._sending: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self._app = self._build_app()

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        self._runner = web.AppRunner(self._app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        for conn in list(self._conns):
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
        from platforms import discord_urls  # noqa: F401  (imports discord.py without its audioop warning)
        import discord

        class FastClient(discord.Client):
            async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
                return None

        options.setdefault("guild_ready_timeout", 0)
        return FastClient(**options)

    # ---- observing -------------------------------------------------------------------------------

    def new_id(self) -> str:
        return str(next(self._ids))

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
    ) -> None:
        """Make the next ``times`` calls to ``route`` fail. ``route`` is a template
        (``POST /channels/{channel_id}/messages``) or a concrete path (``POST /channels/12/messages``)."""
        self._failures.extend(_Failure(route, status, retry_after, code, message, errors) for _ in range(times))

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

    def replay_on_resume(self, events: Iterable[str]) -> None:
        """On the next RESUME, dispatch these earlier events (message or interaction ids) again,
        as Discord sometimes does: the duplicates a gateway inbox must drop."""
        self._replay.extend(str(e) for e in events)

    def push_dm(self, user: str | int, text: str, *, name: str | None = None) -> str:
        """A direct message from ``user`` to the bot; returns the message id."""
        channel = self.dm_channel(user)
        data = self._message_payload(channel, str(user), name, text)
        return self._dispatch("MESSAGE_CREATE", data)["id"]

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
        thread_owner: str | int | None = None,
    ) -> str:
        """A message in a guild text channel, or in thread ``thread_id`` of that channel
        (owned by ``thread_owner``, default ``user``; pass `bot_id` for a bot's thread).
        Unknown guilds, channels and threads are created and announced first."""
        guild, channel, user = str(guild), str(channel), str(user)
        self._ensure_channel(guild, channel)
        where = channel
        if thread_id is not None:
            where = str(thread_id)
            self._ensure_thread(guild, channel, where, str(thread_owner or user))
        mentions_bot = mention_bot
        content = f"<@{self.bot_id}> {text}" if mention_bot else text
        if self.strip_message_content and not mentions_bot:
            content = ""
        data = self._message_payload(where, user, name, content, guild=guild)
        if mention_bot:
            data["mentions"] = [_user(self.bot_id, self.bot_name, bot=True)]
        if reply_to_bot:
            earlier = self.bot_messages(where)
            target = earlier[-1] if earlier else self._store(where, self.bot_id, "(earlier reply)", from_bot=True)
            data["type"] = 19
            data["message_reference"] = {"message_id": target.id, "channel_id": where, "guild_id": guild}
            data["referenced_message"] = self._message_json(target, guild=guild)
        return self._dispatch("MESSAGE_CREATE", data)["id"]

    def push_interaction(
        self, name: str, user: str | int, channel: str | int | None = None, guild: str | int | None = None,
        *, args: str | None = None,
    ) -> str:
        """A slash command ``/name`` from ``user``; in a DM when ``guild`` is None (``channel``
        then defaults to the DM channel). Returns the interaction id."""
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
            self._ensure_channel(str(guild), channel_id)
            payload |= {
                "guild_id": str(guild), "guild_locale": "en-US", "context": 0,
                "authorizing_integration_owners": {"0": str(guild)},
                "guild": {"id": str(guild), "locale": "en-US", "features": []},
                "member": {"user": _user(user), "roles": [], "joined_at": ISO, "deaf": False, "mute": False,
                           "flags": 0, "permissions": "2248473465835073"},
                "channel": self._guilds[str(guild)]["channels"][channel_id],
            }
        payload["channel_id"] = channel_id
        self.interactions[interaction_id] = {
            "token": token, "channel_id": channel_id, "created": time.monotonic(), "responses": [],
            "original": None,
        }
        self._dispatch("INTERACTION_CREATE", payload)
        return interaction_id

    # ---- model ----------------------------------------------------------------------------------

    def _store(self, channel: str, author: str, content: str, *, from_bot: bool, **kw: Any) -> FakeMessage:
        message = FakeMessage(self.new_id(), channel, author, content, from_bot, **kw)
        self.messages[channel].append(message)
        self._touch()
        return message

    def _echo(self, message: FakeMessage) -> dict[str, Any]:
        """Discord sends the bot its own messages over the gateway too; bots must ignore them."""
        data = self._message_json(message, guild=self._channel_guild.get(message.channel_id))
        self._dispatch("MESSAGE_CREATE", data)
        return data

    def _find(self, channel: str, message_id: str) -> FakeMessage | None:
        return next((m for m in self.messages.get(channel, []) if m.id == message_id and not m.deleted), None)

    def _message_payload(
        self, channel: str, user: str, name: str | None, text: str, *, guild: str | None = None
    ) -> dict[str, Any]:
        stored = self._store(channel, user, text, from_bot=False)
        data = self._message_json(stored, guild=guild, name=name)
        if guild is not None:
            data["member"] = {"roles": [], "joined_at": ISO, "deaf": False, "mute": False, "flags": 0}
        return data

    def _message_json(self, m: FakeMessage, *, guild: str | None = None, name: str | None = None) -> dict[str, Any]:
        author = _user(self.bot_id, self.bot_name, bot=True) if m.from_bot else _user(m.author_id, name)
        data: dict[str, Any] = {
            "id": m.id, "channel_id": m.channel_id, "author": author, "content": m.content,
            "timestamp": ISO, "edited_timestamp": ISO if m.edits else None, "tts": False,
            "mention_everyone": False, "mentions": [], "mention_roles": [], "attachments": [], "embeds": [],
            "components": [], "pinned": False, "type": 0, "flags": m.flags,
        }
        if m.nonce is not None:
            data["nonce"] = m.nonce
        if guild is not None:
            data["guild_id"] = guild
        if m.interaction_id is not None:
            data["webhook_id"] = self.application_id
            data["application_id"] = self.application_id
        return data

    def _ensure_guild(self, guild: str) -> dict[str, Any]:
        if guild not in self._guilds:
            self._guilds[guild] = {
                "id": guild, "name": f"guild {guild}", "icon": None, "owner_id": self.new_id(),
                "features": [], "emojis": [], "stickers": [], "member_count": 2, "large": False,
                "unavailable": False, "joined_at": ISO, "verification_level": 0, "premium_tier": 0,
                "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
                "nsfw_level": 0, "preferred_locale": "en-US", "system_channel_flags": 0, "afk_timeout": 300,
                "roles": [{"id": guild, "name": "@everyone", "permissions": "2248473465835073", "position": 0,
                           "color": 0, "hoist": False, "managed": False, "mentionable": False, "flags": 0}],
                "members": [{"user": _user(self.bot_id, self.bot_name, bot=True), "roles": [], "joined_at": ISO,
                             "deaf": False, "mute": False, "flags": 0}],
                "channels": {}, "threads": {}, "voice_states": [], "presences": [], "stage_instances": [],
                "guild_scheduled_events": [], "soundboard_sounds": [],
            }
            if self._session is not None:
                self._dispatch("GUILD_CREATE", self._guild_json(guild))
        return self._guilds[guild]

    def _guild_json(self, guild: str) -> dict[str, Any]:
        g = self._guilds[guild]
        return g | {"channels": list(g["channels"].values()), "threads": list(g["threads"].values())}

    def _ensure_channel(self, guild: str, channel: str) -> None:
        g = self._ensure_guild(guild)
        if channel not in g["channels"]:
            g["channels"][channel] = {
                "id": channel, "type": 0, "guild_id": guild, "name": f"channel-{channel}", "position": 0,
                "permission_overwrites": [], "parent_id": None, "nsfw": False, "topic": None,
                "last_message_id": None, "rate_limit_per_user": 0,
            }
            self._channels.add(channel)
            self._channel_guild[channel] = guild
            if self._session is not None:
                self._dispatch("CHANNEL_CREATE", g["channels"][channel])

    def _ensure_thread(self, guild: str, parent: str, thread: str, owner: str) -> None:
        g = self._guilds[guild]
        if thread not in g["threads"]:
            g["threads"][thread] = {
                "id": thread, "type": 11, "guild_id": guild, "parent_id": parent, "owner_id": owner,
                "name": f"thread-{thread}", "last_message_id": None, "rate_limit_per_user": 0,
                "message_count": 0, "member_count": 1, "flags": 0,
                "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                    "archive_timestamp": ISO, "locked": False},
            }
            self._channels.add(thread)
            self._channel_guild[thread] = guild
            if self._session is not None:
                self._dispatch("THREAD_CREATE", g["threads"][thread] | {"newly_created": True})

    # ---- gateway --------------------------------------------------------------------------------

    def _dispatch(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        session = self._session
        if session is None or not session.valid:
            self._pending.append((event, data))
            return data
        session.seq += 1
        frame = {"op": 0, "t": event, "s": session.seq, "d": data}
        session.log.append(frame)
        if session.conn is not None and not session.conn.ws.closed:
            self._send_soon(session.conn, frame)
        self._touch()
        return data

    def _send_to_live(self, frame: dict[str, Any]) -> None:
        session = self._session
        if session is not None and session.conn is not None and not session.conn.ws.closed:
            self._send_soon(session.conn, frame)

    def _send_soon(self, conn: _Conn, frame: dict[str, Any]) -> None:
        # Push helpers are plain functions; the frame goes out from a task, in dispatch order.
        task = asyncio.ensure_future(self._send(conn, frame))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, conn: _Conn, frame: dict[str, Any]) -> None:
        async with conn.lock:
            if conn.ws.closed:
                return
            try:
                await conn.ws.send_str(json.dumps(frame))
            except (ConnectionError, RuntimeError):
                pass  # the client went away; RESUME replays what it missed

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = _Conn(ws, request)
        self._conns.add(conn)
        self.connections_opened += 1
        self._touch()
        try:
            await self._send(conn, {"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000)}})
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    await self._on_op(conn, json.loads(msg.data))
        finally:
            self._conns.discard(conn)
            if conn.session is not None and conn.session.conn is conn:
                conn.session.conn = None
            self._touch()
        return ws

    async def _on_op(self, conn: _Conn, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d")
        self.gateway_ops.append((op, data))
        self._touch()
        if op == 1:
            await self._send(conn, {"op": 11})
        elif op == 2:
            if data.get("token") != self.token:
                await conn.ws.close(code=4004, message=b"Authentication failed.")
            elif data.get("intents", 0) & MESSAGE_CONTENT_INTENT and not self.message_content_intent:
                await conn.ws.close(code=4014, message=b"Disallowed intent(s).")
            else:
                await self._identify(conn)
        elif op == 6:
            session = self._sessions.get(data.get("session_id"))
            if session is None or not session.valid or data.get("token") != self.token:
                await self._send(conn, {"op": 9, "d": False})
            else:
                await self._resume(conn, session, int(data.get("seq") or 0))

    async def _identify(self, conn: _Conn) -> None:
        session = _Session(id=f"session-{self.new_id()}")
        self._sessions[session.id] = session
        self._session, conn.session, session.conn = session, session, conn
        guilds = [{"id": g, "unavailable": True} for g in self._guilds]
        self._dispatch("READY", {
            "v": 10, "user": _user(self.bot_id, self.bot_name, bot=True), "guilds": guilds,
            "session_id": session.id, "resume_gateway_url": self.gateway_url, "private_channels": [],
            "application": {"id": self.application_id, "flags": self._app_flags()},
        })
        for guild in self._guilds:
            self._dispatch("GUILD_CREATE", self._guild_json(guild))
        pending, self._pending = self._pending, []
        for event, data in pending:
            self._dispatch(event, data)

    async def _resume(self, conn: _Conn, session: _Session, seq: int) -> None:
        conn.session, session.conn = session, conn
        self._session = session
        for frame in [f for f in session.log if f["s"] > seq]:
            await self._send(conn, frame)
        replay, self._replay = self._replay, []
        by_id = {f["d"].get("id"): f for f in session.log if isinstance(f.get("d"), dict)}
        for event_id in replay:
            if event_id in by_id:
                self._dispatch(by_id[event_id]["t"], by_id[event_id]["d"])
        self._dispatch("RESUMED", {})

    def _app_flags(self) -> int:
        return APP_FLAG_MESSAGE_CONTENT if self.message_content_intent else 0

    # ---- REST -----------------------------------------------------------------------------------

    def _build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/gateway", self._gateway)
        r = "/api/v10"
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            ("GET", "/gateway", self._get_gateway),
            ("GET", "/gateway/bot", self._get_gateway),
            ("GET", "/users/@me", self._get_me),
            ("GET", "/oauth2/applications/@me", self._get_application),
            ("PUT", "/applications/{application_id}/commands", self._put_commands),
            ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", self._put_commands),
            ("GET", "/applications/{application_id}/commands", self._get_commands),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", self._get_commands),
            ("POST", "/channels/{channel_id}/messages", self._create_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message),
            ("POST", "/channels/{channel_id}/typing", self._typing),
            ("POST", "/interactions/{interaction_id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{application_id}/{token}", self._followup),
            ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", self._edit_webhook_message),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, r + path, handler)
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        try:
            return await self._handle(request, handler)
        except web.HTTPException:
            raise
        except Exception as exc:  # a bug in the fake: kept for tests to assert on, not only logged
            self.errors.append(exc)
            raise

    async def _handle(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        if request.path == "/gateway":
            return await handler(request)
        path = request.path.removeprefix("/api/v10")
        resource = request.match_info.route.resource
        template = resource.canonical.removeprefix("/api/v10") if resource is not None else path
        name = f"{request.method} {template}"
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
        call = Call(request.method, name, path, body, dict(request.query), dict(request.headers))
        self.calls.append(call)
        response = self._scripted_failure(call)
        if response is None and not name.startswith(("POST /interactions", "POST /webhooks", "PATCH /webhooks")):
            if request.headers.get("Authorization") != f"Bot {self.token}":
                response = _error(401, 0, "401: Unauthorized")
        if response is None:
            response = await handler(request)
        call.status = response.status
        self._touch()
        return response

    def _scripted_failure(self, call: Call) -> web.Response | None:
        for failure in self._failures:
            if failure.route in (call.route, f"{call.method} {call.path}"):
                self._failures.remove(failure)
                if failure.status == 429:
                    body = {"message": "You are being rate limited.", "retry_after": failure.retry_after,
                            "global": False, "code": failure.code or 0}
                    headers = {"Via": "1.1 google", "Retry-After": str(max(1, round(failure.retry_after))),
                               "X-RateLimit-Scope": "user"}
                    return _json(body, 429, headers)
                return _error(failure.status, failure.code or 0, failure.message or "Scripted failure", failure.errors)
        return None

    async def _get_gateway(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _get_me(self, request: web.Request) -> web.Response:
        return _json(_user(self.bot_id, self.bot_name, bot=True))

    async def _get_application(self, request: web.Request) -> web.Response:
        return _json({
            "id": self.application_id, "name": self.bot_name, "description": "", "icon": None,
            "bot_public": True, "bot_require_code_grant": False, "owner": _user(self.new_id()),
            "verify_key": "0" * 64, "flags": self._app_flags(), "summary": "",
        })

    async def _put_commands(self, request: web.Request) -> web.Response:
        guild = request.match_info.get("guild_id")
        registered = []
        for command in await request.json():
            registered.append(command | {"id": self.new_id(), "application_id": self.application_id,
                                         "version": self.new_id(), "guild_id": guild})
        self.commands[guild] = registered
        return _json(registered)

    async def _get_commands(self, request: web.Request) -> web.Response:
        return _json(self.commands.get(request.match_info.get("guild_id"), []))

    def _check_content(self, body: dict[str, Any]) -> web.Response | None:
        content = body.get("content")
        if content is not None and len(content) > TEXT_LIMIT:
            errors = {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                                               "message": f"Must be {TEXT_LIMIT} or fewer in length."}]}}
            return _error(400, 50035, "Invalid Form Body", errors)
        return None

    async def _create_message(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        body = await request.json()
        if (refused := self._check_content(body)) is not None:
            return refused
        if not body.get("content"):
            return _error(400, 50006, "Cannot send an empty message")
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce"):
            for earlier in self.messages[channel]:
                if earlier.from_bot and earlier.nonce == str(nonce):
                    return _json(self._message_json(earlier))  # Discord returns the first message again
        message = self._store(channel, self.bot_id, body["content"], from_bot=True,
                              flags=int(body.get("flags") or 0), nonce=None if nonce is None else str(nonce))
        return _json(self._echo(message))

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel, message_id = request.match_info["channel_id"], request.match_info["message_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        message = self._find(channel, message_id)
        if message is None:
            return _error(404, 10008, "Unknown Message")
        if not message.from_bot or message.interaction_id is not None:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        return self._apply_edit(message, await request.json())

    def _apply_edit(self, message: FakeMessage, body: dict[str, Any]) -> web.Response:
        if (refused := self._check_content(body)) is not None:
            return refused
        if "content" in body:
            message.edits.append(message.content)
            message.content = body["content"]
            message.flags &= ~FLAG_LOADING
        self._touch()
        return _json(self._message_json(message))

    async def _delete_message(self, request: web.Request) -> web.Response:
        message = self._find(request.match_info["channel_id"], request.match_info["message_id"])
        if message is None:
            return _error(404, 10008, "Unknown Message")
        message.deleted = True
        return web.Response(status=204)

    async def _typing(self, request: web.Request) -> web.Response:
        if request.match_info["channel_id"] not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        return web.Response(status=204)

    def _interaction_by_token(self, token: str) -> tuple[str, dict[str, Any]] | None:
        return next(((i, v) for i, v in self.interactions.items() if v["token"] == token), None)

    async def _callback(self, request: web.Request) -> web.Response:
        interaction_id = request.match_info["interaction_id"]
        record = self.interactions.get(interaction_id)
        if record is None or record["token"] != request.match_info["token"]:
            return _error(404, 10062, "Unknown interaction")
        if record["responses"]:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        if time.monotonic() - record["created"] > INTERACTION_ACK_SECONDS:
            return _error(404, 10062, "Unknown interaction")
        body = await request.json()
        kind = body.get("type")
        record["responses"].append(kind)
        content = (body.get("data") or {}).get("content") or ""
        message = self._store(record["channel_id"], self.bot_id, content, from_bot=True,
                              flags=FLAG_LOADING if kind == 5 else 0, interaction_id=interaction_id)
        record["original"] = message.id
        resource: dict[str, Any] = {"type": kind, "message": self._message_json(message)}
        return _json({
            "interaction": {"id": interaction_id, "type": 2, "response_message_id": message.id,
                            "response_message_loading": kind == 5, "response_message_ephemeral": False},
            "resource": resource,
        })

    async def _followup(self, request: web.Request) -> web.Response:
        found = self._interaction_by_token(request.match_info["token"])
        if found is None:
            return _error(404, 10015, "Unknown Webhook")
        interaction_id, record = found
        if not record["responses"]:
            return _error(404, 10015, "Unknown Webhook")
        body = await request.json()
        if (refused := self._check_content(body)) is not None:
            return refused
        message = self._store(record["channel_id"], self.bot_id, body.get("content") or "", from_bot=True,
                              flags=int(body.get("flags") or 0), interaction_id=interaction_id)
        data = self._echo(message)
        if request.query.get("wait") in ("true", "1", "True"):
            return _json(data)
        return web.Response(status=204)

    async def _edit_webhook_message(self, request: web.Request) -> web.Response:
        found = self._interaction_by_token(request.match_info["token"])
        if found is None:
            return _error(404, 10015, "Unknown Webhook")
        _, record = found
        message_id = request.match_info["message_id"]
        if message_id == "@original":
            message_id = record["original"] or ""
        message = self._find(record["channel_id"], message_id)
        if message is None:
            return _error(404, 10008, "Unknown Message")
        return self._apply_edit(message, await request.json())


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
