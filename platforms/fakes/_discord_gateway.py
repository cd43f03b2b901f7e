"""The fake Discord's gateway: WebSocket connections, sessions, dispatch (in order, logged for
RESUME), and the ops the client sends (heartbeat, IDENTIFY, RESUME)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from platforms.fakes._discord_model import _user

MESSAGE_CONTENT_INTENT = 1 << 15
APP_FLAG_MESSAGE_CONTENT = 1 << 18
HEARTBEAT_ACK_DELAY = 0.05
"""Seconds before a heartbeat is acknowledged: a round trip to Discord, about."""


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
    stalled: bool = False
    """Half-open (`FakeDiscord.stall`): frames for it are lost, what it sends is unheard."""
    deaf: bool = False
    """Half-open without even the close answered (`FakeDiscord.stall`): nothing it sends is read."""


class DiscordGateway:
    """The gateway half of `FakeDiscord`, which holds the state (sessions, connections, the
    replay queue) and mixes this in."""

    def _dispatch(self, event: str, data: dict[str, Any], *, only: _Session | None = None) -> dict[str, Any]:
        """To the newest session (logged for its RESUME), and to every other one still connected:
        Discord sends each session of a bot every event, so two clients on one token both hear a
        message. An invalidated session gets none, and a later IDENTIFY's session none from before its
        READY: a message meanwhile is only in its channel's history, as on Discord, where a bot must
        look for it. ``only``: a session's own events (READY, its GUILD_CREATEs, RESUMED)."""
        if event == "MESSAGE_CREATE":  # what the history serves (`_history_json`)
            self._dispatched[data["id"]] = data
        session = self._session
        for target in [only] if only is not None else self._sessions.values():
            connected = target.conn is not None and not target.conn.ws.closed
            if target.valid and (target is session or connected):
                target.seq += 1
                frame = {"op": 0, "t": event, "s": target.seq, "d": data}
                target.log.append(frame)
                if connected:
                    assert target.conn is not None
                    self._send_soon(target.conn, frame)
        self._touch()
        return data

    def _send_to_live(self, frame: dict[str, Any]) -> None:
        session = self._session
        if session is not None and session.conn is not None and not session.conn.ws.closed:
            self._send_soon(session.conn, frame)

    def _send_soon(self, conn: _Conn, frame: dict[str, Any], *, delay: float = 0.0) -> None:
        # Push helpers are plain functions; the frame goes out from a task, in dispatch order. A
        # task, not a timer, even when delayed: `close` waits for every task, and a timer firing
        # after it would leave one pending when the loop closes.
        task = asyncio.ensure_future(self._send(conn, frame, delay=delay))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, conn: _Conn, frame: dict[str, Any], *, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        async with conn.lock:
            if conn.ws.closed or conn.stalled:
                return
            try:
                await conn.ws.send_str(json.dumps(frame))
            except (ConnectionError, RuntimeError):
                pass  # the client went away; RESUME replays what it missed

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        if self._closing:  # discord.py, told so, reconnects after a backoff; its socket would hold the close up
            return web.Response(status=503, text="the fake Discord is shutting down")
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = _Conn(ws, request)
        self._conns.add(conn)
        self.connections_opened += 1
        self._touch()
        try:
            await self._send(conn, {"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000)}})
            async for msg in ws:
                if conn.stalled:
                    continue  # unheard (aiohttp still answers its close frame: see `FakeDiscord.stall`)
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
            # Real Discord answers over a network. At once, the ACK could be read before discord.py's
            # heartbeat thread noted its send, which then measured a whole interval of latency and
            # warned "Can't keep up ... websocket is 41.3s behind" at every other heartbeat.
            self._send_soon(conn, {"op": 11}, delay=HEARTBEAT_ACK_DELAY)
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
        guilds = [{"id": g, "unavailable": True} for g in self._member_guilds()]
        self._dispatch("READY", {
            "v": 10, "user": _user(self.bot_id, self.bot_name, bot=True), "guilds": guilds,
            "session_id": session.id, "resume_gateway_url": self.gateway_url, "private_channels": [],
            "application": {"id": self.application_id, "flags": self._app_flags()},
        }, only=session)
        for guild in self._member_guilds():
            self._dispatch("GUILD_CREATE", self._guild_json(guild), only=session)

    async def _resume(self, conn: _Conn, session: _Session, seq: int) -> None:
        conn.session, session.conn = session, conn
        self._session = session
        for frame in [f for f in session.log if f["s"] > seq]:
            await self._send(conn, frame)
        replay, self._replay = self._replay, []
        by_id = {f["d"].get("id"): f for f in session.log if isinstance(f.get("d"), dict)}
        for event_id in replay:
            if event_id in by_id:
                self._dispatch(by_id[event_id]["t"], by_id[event_id]["d"], only=session)
        self._dispatch("RESUMED", {}, only=session)

    def _app_flags(self) -> int:
        return APP_FLAG_MESSAGE_CONTENT if self.message_content_intent else 0
