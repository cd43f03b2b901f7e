"""The fake Slack's Socket Mode: the ``/link`` WebSocket, round-robin envelope delivery, ack
collection and redelivery of unacked ``events_api`` envelopes."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
from aiohttp import web

from platforms.fakes._slack_types import Ack, Connection, Envelope


class SlackSocketMode:
    """Socket Mode for `FakeSlack`, which holds the state (connections, envelopes, acks, the
    queue and timers) and mixes this in."""

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every connected client to reconnect, as Slack does before recycling a host."""
        for conn in [c for c in self.open_connections if not c.stalled]:
            await conn.ws.send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}})

    def drop_socket(self) -> None:
        """Cut every Socket Mode connection without a close handshake, like a network failure."""
        for conn in self.open_connections:
            if conn.request.transport is not None:
                conn.request.transport.abort()

    def stall(self) -> None:
        """Make every Socket Mode connection half-open, as when a NAT or load balancer forgets it:
        no close frame, no FIN, and nothing in either direction any more (no pongs, no envelopes,
        acks unheard). Envelopes sent on it are lost and redelivered when their ack times out;
        the connection ends when the client closes its side."""
        for conn in self.open_connections:
            conn.stalled = True

    def refuse_sockets(self, times: int = 1) -> None:
        """Answer the next ``times`` Socket Mode handshakes with 503 instead of a WebSocket, as a
        Slack host in trouble, or a proxy that does not pass WebSockets, does."""
        self._refused_sockets += times

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if self._refused_sockets:
            self._refused_sockets -= 1
            return web.Response(status=503, text="Service Unavailable")
        # Pings are answered here, not by aiohttp, so that a stalled connection can stop answering.
        ws = web.WebSocketResponse(autoping=False, autoclose=False)
        await ws.prepare(request)
        conn = Connection(len(self.connections) + 1, ws, request)
        self.connections.append(conn)
        await ws.send_json({"type": "hello", "num_connections": len(self.open_connections),
                            "debug_info": {"host": "fake"}, "connection_info": {"app_id": self.app_id}})
        self._bump()
        while self._queued and conn.open:
            envelope, queued_at = self._queued.popleft()
            if self.give_up_after is not None and time.monotonic() - queued_at >= self.give_up_after:
                self.given_up.append(envelope)  # Slack's last retry found no connection either
                continue
            await self._send_envelope(envelope)
        try:
            while True:
                msg = await ws.receive()
                if msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break
                if conn.stalled:
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING):
                        await _until_lost(request)  # unanswered: the client gives up and closes its side
                        break
                    continue
                if msg.type == aiohttp.WSMsgType.PING:
                    await ws.pong(msg.data)
                elif msg.type == aiohttp.WSMsgType.CLOSE:
                    await ws.close()
                    break
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    self._on_ack(conn, json.loads(msg.data))
        finally:
            self._bump()
        return ws

    def _on_ack(self, conn: Connection, data: dict[str, Any]) -> None:
        envelope = self.envelopes.get(data.get("envelope_id", ""))
        if envelope is None:
            return
        if self._lost_acks:
            self._lost_acks -= 1
            return
        self.acks.append(Ack(envelope.envelope_id, conn.id, data.get("payload")))
        if envelope.type == "slash_commands":
            self._answered_in_ack(envelope.payload, data.get("payload"))
        envelope.acked = True
        timer = self._timers.pop(envelope.envelope_id, None)
        if timer is not None:
            timer.cancel()
        self._bump()

    async def _send_envelope(self, envelope: Envelope) -> None:
        conns = self.open_connections
        if not conns:
            self._queued.append((envelope, time.monotonic()))
            return
        conn = conns[next(self._rr) % len(conns)]
        envelope.deliveries.append(conn.id)
        try:
            if not conn.stalled:  # else lost on the way
                await conn.ws.send_json(envelope.wire())
        except ConnectionError:
            pass  # the ack timer redelivers it
        loop = asyncio.get_running_loop()
        self._timers[envelope.envelope_id] = loop.call_later(self.ack_timeout, self._ack_timed_out, envelope)
        self._bump()

    def _ack_timed_out(self, envelope: Envelope) -> None:
        self._timers.pop(envelope.envelope_id, None)
        if envelope.acked or envelope.type != "events_api":
            return  # Slack never retries slash commands
        if envelope.retry_attempt >= 3:
            self.given_up.append(envelope)  # its last retry went unacknowledged too
            self._bump()
            return
        envelope.retry_attempt += 1
        envelope.retry_reason = "timeout"
        self._spawn(self._send_envelope(envelope))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _until_lost(request: web.Request) -> None:
    """Until the connection under ``request`` is closed. Polled: once a close frame came in, aiohttp's
    ``receive`` returns at once without reading, and says nothing when the connection goes."""
    while request.transport is not None and not request.transport.is_closing():
        await asyncio.sleep(0.05)
