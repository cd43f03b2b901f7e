"""A loopback fake of Slack: the Web API, Socket Mode, signed HTTP delivery and response URLs.

The real slack-bolt / slack-sdk clients talk to it over real sockets: point
``AsyncWebClient(base_url=fake.api_base)`` at it and ``apps.connections.open``
hands out the fake's own WebSocket URL, so Socket Mode follows without patching.

What it does:

- Web API (``POST /api/<method>``, JSON or form): ``auth.test``, ``apps.connections.open``,
  ``chat.postMessage``, ``chat.update``, ``chat.delete``, ``chat.postEphemeral``. Bearer tokens
  are checked (``xoxb`` for chat, ``xapp`` for connections); answers are ``application/json``.
  Every call is recorded in `calls`; messages are kept per ``(channel, thread_ts)`` in
  `messages` (``thread_ts`` is None at the top level), ephemerals in `ephemeral`.
- Socket Mode (``/link``): ``hello`` on connect, envelopes (``events_api``,
  ``slash_commands``), ack collection (`acks`), redelivery of an ``events_api`` envelope not
  acked within ``ack_timeout`` (``retry_attempt`` + 1, up to 3), ``disconnect`` messages
  (`disconnect`), dropped sockets (`drop_socket`) and lost acks (`lose_next_ack`).
- HTTP delivery to a gateway (`send_http_event`, `send_http_command`): v0-signed, with
  ``X-Slack-Retry-Num``; pushes made without a Socket Mode connection go there when
  ``events_url`` is set, retried like Slack does on errors and timeouts (scaled down).
- ``response_url`` endpoints (``/response/<id>``) that slash-command payloads point at.
- Scripted failures (`fail_next`): ``ok:false`` errors and 429 with ``Retry-After``.

Run it alone with ``python -m platforms.fakes.slack --port 8790``; ``/_fake/dm``,
``/_fake/mention`` and ``/_fake/command`` (POST JSON) push events, ``/_fake/messages`` lists
the messages so far.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from platforms.fakes._waiting import wait_until

Key = tuple[str, str | None]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class Failure:
    error: str
    status: int = 200
    retry_after: float | None = None


@dataclass
class Envelope:
    envelope_id: str
    type: str
    payload: dict[str, Any]
    retry_attempt: int = 0
    retry_reason: str | None = None
    acked: bool = False
    deliveries: list[int] = field(default_factory=list)
    """Ids of the connections this envelope was sent on, in order."""

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "envelope_id": self.envelope_id,
            "type": self.type,
            "payload": self.payload,
            "accepts_response_payload": self.type != "events_api",
        }
        if self.type == "events_api":
            out.update(retry_attempt=self.retry_attempt, retry_reason=self.retry_reason or "")
        return out


@dataclass
class Ack:
    envelope_id: str
    connection: int
    payload: dict[str, Any] | None


@dataclass
class Connection:
    id: int
    ws: web.WebSocketResponse
    request: web.Request

    @property
    def open(self) -> bool:
        return not self.ws.closed


@dataclass
class HttpResult:
    status: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


def sign(secret: str, timestamp: str, body: str) -> str:
    """Slack's v0 request signature over ``v0:<timestamp>:<body>``."""
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


class FakeSlack:
    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake",
        app_token: str = "xapp-fake",
        signing_secret: str | None = None,
        events_url: str | None = None,
        team_id: str = "T0FAKE",
        app_id: str = "A0FAKE",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        ack_timeout: float = 3.0,
        http_retry_delays: tuple[float, ...] = (0.0, 0.1, 0.2),
        echo_bot_messages: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.bot_token, self.app_token = bot_token, app_token
        self.signing_secret, self.events_url = signing_secret, events_url
        self.team_id, self.app_id, self.bot_user_id, self.bot_id = team_id, app_id, bot_user_id, bot_id
        self.ack_timeout, self.http_retry_delays = ack_timeout, http_retry_delays
        self.echo_bot_messages = echo_bot_messages
        self._host, self._port = host, port
        self.calls: list[Call] = []
        self.messages: dict[Key, list[dict[str, Any]]] = defaultdict(list)
        self.ephemeral: list[dict[str, Any]] = []
        self.connections: list[Connection] = []
        self.envelopes: dict[str, Envelope] = {}
        self.acks: list[Ack] = []
        self.http_results: list[HttpResult] = []
        self._failures: dict[str, deque[Failure]] = defaultdict(deque)
        self._lost_acks = 0
        self._queued: deque[Envelope] = deque()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._rr = itertools.count()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.base_url = ""

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link", self._socket)
        app.router.add_post("/response/{id}", self._response_url)
        app.router.add_post("/_fake/{what}", self._control)
        app.router.add_get("/_fake/messages", self._list_messages)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        self._http = aiohttp.ClientSession()
        return self

    async def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for conn in self.connections:
            if conn.open:
                await conn.ws.close()
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api/"

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://", 1) + "/link"

    @property
    def open_connections(self) -> list[Connection]:
        return [c for c in self.connections if c.open]

    # -- scripting and waiting ---------------------------------------------------------------

    def fail_next(
        self, method: str, error: str = "ratelimited", *, status: int = 200, retry_after: float | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail. ``status=429`` sends ``Retry-After``
        (default 1); ``method="response_url"`` scripts the response URLs."""
        if status == 429 and retry_after is None:
            retry_after = 1
        self._failures[method].extend(Failure(error, status, retry_after) for _ in range(times))

    def lose_next_ack(self, count: int = 1) -> None:
        """Ignore the next ``count`` acks, as if they were lost on the way: Slack redelivers."""
        self._lost_acks += count

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def texts(self, channel: str, thread_ts: str | None = None) -> list[str]:
        return [m.get("text", "") for m in self.messages.get((channel, thread_ts), [])]

    def dm_channel(self, user: str) -> str:
        return f"D{user}"

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Return the first truthy ``predicate()``, re-checked on every change to the fake (and
        every 20 ms, for conditions on other objects); TimeoutError after ``timeout`` seconds."""
        return await wait_until(predicate, timeout, changed=lambda: self._changed)

    def _bump(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- pushing events ----------------------------------------------------------------------

    async def push_dm(self, user: str, text: str) -> dict[str, Any]:
        """A user writes to the bot in a direct message."""
        return await self.push_message(self.dm_channel(user), user, text, channel_type="im")

    async def push_mention(
        self, channel: str, user: str, text: str, thread_ts: str | None = None, *, also_app_mention: bool = False
    ) -> dict[str, Any]:
        """A user mentions the bot in a channel (``<@BOT>`` is prepended unless present). Slack sends
        a ``message`` event; with an ``app_mention`` subscription too, also an ``app_mention``."""
        mention = f"<@{self.bot_user_id}>"
        text = text if mention in text else f"{mention} {text}"
        body = await self.push_message(channel, user, text, thread_ts=thread_ts)
        if also_app_mention:
            event = {**body["event"], "type": "app_mention"}
            event.pop("channel_type", None)
            await self.push_event(event)
        return body

    async def push_message(
        self, channel: str, user: str, text: str, *, thread_ts: str | None = None, channel_type: str = "channel"
    ) -> dict[str, Any]:
        """A user posts a message (no mention added); ``thread_ts`` makes it a thread reply."""
        message = self._store(channel, thread_ts, {"user": user, "text": text})
        event = {**message, "channel_type": channel_type, "team": self.team_id,
                 "client_msg_id": str(uuid.uuid4()), "event_ts": message["ts"]}
        if thread_ts is not None:
            event["parent_user_id"] = self._author(channel, thread_ts)
        return await self.push_event(event)

    async def push_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """Deliver one Events API event, wrapped in its ``event_callback``; returns the callback."""
        body = {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": self.bot_user_id, "is_bot": True}],
        }
        await self._deliver("events_api", body)
        return body

    async def push_slash_command(self, command: str, user: str, channel: str, text: str = "") -> dict[str, Any]:
        """A user runs a slash command; over Socket Mode when connected, else over HTTP."""
        rid = f"R{next(self._ids):08d}"
        form = {
            "token": "fake-verification-token", "team_id": self.team_id, "team_domain": "fake",
            "channel_id": channel, "channel_name": "directmessage" if channel.startswith("D") else channel.lower(),
            "user_id": user, "user_name": user.lower(), "command": command, "text": text,
            "api_app_id": self.app_id, "is_enterprise_install": "false",
            "response_url": f"{self.base_url}/response/{rid}", "trigger_id": f"{rid}.{uuid.uuid4().hex[:12]}",
        }
        await self._deliver("slash_commands", form)
        return form

    async def _deliver(self, kind: str, payload: dict[str, Any]) -> None:
        if not self.open_connections and self.events_url:
            await self._deliver_http(kind, payload)
            return
        envelope = Envelope(str(uuid.uuid4()), kind, payload)
        self.envelopes[envelope.envelope_id] = envelope
        await self._send_envelope(envelope)

    async def _deliver_http(self, kind: str, payload: dict[str, Any]) -> None:
        assert self.events_url and self.signing_secret, "set events_url and signing_secret for HTTP delivery"
        for attempt, delay in enumerate((0.0, *self.http_retry_delays)):
            await asyncio.sleep(delay)
            retry = attempt or None
            try:
                if kind == "events_api":
                    result = await self.send_http_event(self.events_url, payload, self.signing_secret, retry_num=retry)
                else:
                    result = await self.send_http_command(self.events_url, payload, self.signing_secret)
            except (aiohttp.ClientError, TimeoutError):
                continue
            if result.status == 200 or kind != "events_api":
                return

    # -- signed HTTP delivery ----------------------------------------------------------------

    async def send_http_event(
        self, url: str, payload: dict[str, Any], signing_secret: str, *, retry_num: int | None = None,
        retry_reason: str = "http_timeout", timestamp: int | str | None = None, signature: str | None = None,
    ) -> HttpResult:
        """POST one Events API payload (JSON) to ``url``, signed unless ``signature`` is given."""
        headers = {"Content-Type": "application/json"}
        if retry_num is not None:
            headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason})
        return await self._post_signed(url, json.dumps(payload), headers, signing_secret, timestamp, signature)

    async def send_http_command(
        self, url: str, form: dict[str, Any], signing_secret: str, *, timestamp: int | str | None = None,
        signature: str | None = None,
    ) -> HttpResult:
        """POST one slash command (form-encoded) to ``url``, signed unless ``signature`` is given."""
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return await self._post_signed(url, urllib.parse.urlencode(form), headers, signing_secret, timestamp, signature)

    async def _post_signed(
        self, url: str, body: str, headers: dict[str, str], secret: str, timestamp: Any, signature: str | None
    ) -> HttpResult:
        assert self._http is not None, "start the fake first"
        ts = str(int(time.time()) if timestamp is None else timestamp)
        headers = {**headers, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature or sign(secret, ts, body)}
        async with self._http.post(url, data=body.encode(), headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=3)) as resp:
            result = HttpResult(resp.status, await resp.text(), dict(resp.headers))
        self.http_results.append(result)
        self._bump()
        return result

    # -- Socket Mode -------------------------------------------------------------------------

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every connected client to reconnect, as Slack does before recycling a host."""
        for conn in self.open_connections:
            await conn.ws.send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}})

    def drop_socket(self) -> None:
        """Cut every Socket Mode connection without a close handshake, like a network failure."""
        for conn in self.open_connections:
            if conn.request.transport is not None:
                conn.request.transport.abort()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        conn = Connection(len(self.connections) + 1, ws, request)
        self.connections.append(conn)
        await ws.send_json({"type": "hello", "num_connections": len(self.open_connections),
                            "debug_info": {"host": "fake"}, "connection_info": {"app_id": self.app_id}})
        self._bump()
        while self._queued and conn.open:
            await self._send_envelope(self._queued.popleft())
        try:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
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
        envelope.acked = True
        timer = self._timers.pop(envelope.envelope_id, None)
        if timer is not None:
            timer.cancel()
        self._bump()

    async def _send_envelope(self, envelope: Envelope) -> None:
        conns = self.open_connections
        if not conns:
            self._queued.append(envelope)
            return
        conn = conns[next(self._rr) % len(conns)]
        envelope.deliveries.append(conn.id)
        try:
            await conn.ws.send_json(envelope.wire())
        except ConnectionError:
            pass  # the ack timer redelivers it
        loop = asyncio.get_running_loop()
        self._timers[envelope.envelope_id] = loop.call_later(self.ack_timeout, self._ack_timed_out, envelope)
        self._bump()

    def _ack_timed_out(self, envelope: Envelope) -> None:
        self._timers.pop(envelope.envelope_id, None)
        if envelope.acked or envelope.type != "events_api" or envelope.retry_attempt >= 3:
            return  # Slack never retries slash commands
        envelope.retry_attempt += 1
        envelope.retry_reason = "timeout"
        self._spawn(self._send_envelope(envelope))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- Web API -----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.pop("token", None)
        self.calls.append(Call(method, params, token))
        self._bump()
        failure = self._next_failure(method)
        if failure is not None:
            return self._failure_response(failure)
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != wanted:
            return _json({"ok": False, "error": "not_authed" if not token else "invalid_auth"})
        handler = self._methods.get(method)
        if handler is None:
            return _json({"ok": False, "error": "unknown_method"})
        return _json(handler(self, params))

    def _next_failure(self, method: str) -> Failure | None:
        queue = self._failures.get(method)
        return queue.popleft() if queue else None

    @staticmethod
    def _failure_response(failure: Failure) -> web.Response:
        headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
        return _json({"ok": False, "error": failure.error}, status=failure.status, headers=headers)

    def _auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "switchboard",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _connections_open(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"{self.ws_url}?ticket={uuid.uuid4()}"}

    def _post_message(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not p.get("text") and not p.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if channel.startswith("U"):
            channel = self.dm_channel(channel)
        if len(str(p.get("text", ""))) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        message = self._store(channel, p.get("thread_ts") or None,
                              {"user": self.bot_user_id, "bot_id": self.bot_id, "text": p.get("text", "")})
        self._echo({**message, "app_id": self.app_id})
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}

    def _update(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._find(str(p.get("channel")), str(p.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        previous = dict(message)
        message["text"] = p.get("text", "")
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        self._echo({"subtype": "message_changed", "channel": message["channel"], "message": dict(message),
                    "previous_message": previous, "hidden": True, "ts": self._next_ts()})
        return {"ok": True, "channel": message["channel"], "ts": message["ts"], "text": message["text"],
                "message": message}

    def _delete(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._find(str(p.get("channel")), str(p.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        self.messages[(message["channel"], message.get("thread_ts"))].remove(message)
        self._echo({"subtype": "message_deleted", "channel": message["channel"], "deleted_ts": message["ts"],
                    "previous_message": message, "hidden": True, "ts": self._next_ts()})
        return {"ok": True, "channel": message["channel"], "ts": message["ts"]}

    def _post_ephemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        if not p.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        ts = self._next_ts()
        self.ephemeral.append({"channel": p["channel"], "user": p.get("user"), "text": p.get("text", ""),
                               "thread_ts": p.get("thread_ts"), "via": "chat.postEphemeral", "ts": ts})
        return {"ok": True, "message_ts": ts}

    _methods: dict[str, Callable[[FakeSlack, dict[str, Any]], dict[str, Any]]] = {
        "auth.test": _auth_test,
        "apps.connections.open": _connections_open,
        "chat.postMessage": _post_message,
        "chat.update": _update,
        "chat.delete": _delete,
        "chat.postEphemeral": _post_ephemeral,
    }

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(Call("response_url", {"id": request.match_info["id"], **body}, None))
        self._bump()
        failure = self._next_failure("response_url")
        if failure is not None:
            headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
            return web.Response(status=failure.status if failure.status != 200 else 404, text=failure.error,
                                headers=headers)
        self.ephemeral.append({"id": request.match_info["id"], "text": body.get("text", ""),
                               "response_type": body.get("response_type", "ephemeral"), "via": "response_url"})
        return web.Response(text="ok")

    # -- storage -----------------------------------------------------------------------------

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def _store(self, channel: str, thread_ts: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        message = {"type": "message", "channel": channel, "ts": self._next_ts(), **fields}
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        self.messages[(channel, thread_ts)].append(message)
        self._bump()
        return message

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        for (chan, _), messages in self.messages.items():
            if chan == channel:
                for message in messages:
                    if message["ts"] == ts:
                        return message
        return None

    def _author(self, channel: str, ts: str) -> str | None:
        message = self._find(channel, ts)
        return message.get("user") if message else None

    def _echo(self, event: dict[str, Any]) -> None:
        """Slack sends the bot's own posts, edits and deletions back as message events."""
        if self.echo_bot_messages and (self.open_connections or self.events_url):
            self._spawn(self.push_event({**event, "event_ts": event.get("ts")}))

    # -- control endpoints for the command-line fake -----------------------------------------

    async def _control(self, request: web.Request) -> web.Response:
        data = await request.json()
        what = request.match_info["what"]
        user = data.get("user", "U0HUMAN")
        if what == "dm":
            body = await self.push_dm(user, data["text"])
        elif what == "mention":
            body = await self.push_mention(data.get("channel", "C0GENERAL"), user, data["text"], data.get("thread_ts"))
        elif what == "command":
            body = await self.push_slash_command(data["command"], user, data.get("channel", self.dm_channel(user)),
                                                 data.get("text", ""))
        else:
            raise web.HTTPNotFound()
        return _json(body)

    async def _list_messages(self, _: web.Request) -> web.Response:
        return _json({"messages": [m for ms in self.messages.values() for m in ms], "ephemeral": self.ephemeral})


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


async def _serve(args: argparse.Namespace) -> None:
    fake = FakeSlack(bot_token=args.bot_token, app_token=args.app_token, signing_secret=args.signing_secret,
                     events_url=args.events_url, host=args.host, port=args.port)
    async with fake:
        print(f"Fake Slack Web API:  {fake.api_base}   (platforms.slack.api_base)")
        print(f"Socket Mode:         {fake.ws_url}   (handed out by apps.connections.open)")
        print(f"Tokens:              bot_token={fake.bot_token}  app_token={fake.app_token}")
        if fake.events_url:
            print(f"HTTP events go to:   {fake.events_url}  (signing_secret={fake.signing_secret})")
        print(f"Push a DM:           curl -X POST {fake.base_url}/_fake/dm -d '{{\"user\":\"U1\",\"text\":\"hi\"}}'")
        print(f"Messages so far:     {fake.base_url}/_fake/messages")
        print("Ctrl-C to stop.", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m platforms.fakes.slack", description="A loopback fake Slack.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--bot-token", default="xoxb-fake")
    parser.add_argument("--app-token", default="xapp-fake")
    parser.add_argument("--signing-secret", default="fake-signing-secret")
    parser.add_argument("--events-url", default=None, help="deliver events over HTTP here (HTTP mode)")
    try:
        asyncio.run(_serve(parser.parse_args(argv)))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
