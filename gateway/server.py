"""The HTTP server: health, metrics, the operator console, the webhook platform, the web chat, and
platform webhooks (Telegram, Slack).

Slow or half-sent requests are cut off and connections are capped
(`gateway.http_guard`); the limits come from ``server.*`` in the configuration.
Its stop keeps to ``server.shutdown_grace_seconds`` (`Server.stop`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
from dataclasses import dataclass

from aiohttp import web, web_response
from aiohttp.typedefs import Handler

from gateway.app import Gateway
from gateway.backlog import unread_json
from gateway.console.routes import Console, console_access, refused
from gateway.errors import StartupError
from gateway.http_guard import (
    ConnectionGuard,
    PendingBodies,
    ServerLog,
    body_guard,
    encoding_guard,
    expect_guard,
    security_headers,
)
from gateway.live_reads import LiveReads
from gateway.metrics import CONTENT_TYPE
from gateway.store import checkpointer, write_lock
from lifecycle import SqliteDatabase
from platforms.base import Streaming
from platforms.web_access import Refusal, error_response
from platforms.web_pages import PAGE_HEADERS

log = logging.getLogger("gateway.server")

API_PREFIXES = ("/chat/api", "/webhooks", "/console/api")
"""Paths whose every answer is JSON (the web chat's, the webhook platform's and the console's APIs): a path
under them that names nothing is answered 404 by `json_not_found`, not with aiohttp's line of plain text."""

SERVER_NAME = "switchboard"
"""Every answer's ``Server`` header. aiohttp's default names its version and Python's (``Python/3.11
aiohttp/3.14.5``): a scanner's list of what to try."""

WEB_CHAT_OFF = ("The web chat is not enabled on this gateway. To serve it here, set platforms.web.enabled: true"
                " in the gateway's configuration and restart it.\n")
"""The 404 of ``/chat`` and the paths under it while the web chat is off: whoever opens the page in a browser
reads this, not the start log that says the same."""

CUT_OFF_SECONDS = 1.0
"""What the requests still running when a stop cuts them off get to end before their connections are
closed: the ones waiting for their bodies are answered at once, the others had the grace already,
and a client that does not read its answer would hold the stop for ever."""


@dataclass(frozen=True, slots=True)
class Limits:
    header_timeout: float = 10.0
    """Seconds a new connection may take to send its first request's line and headers."""
    idle_timeout: float = 75.0
    """Seconds a kept-alive connection may wait for (and take to send) its next request."""
    body_timeout: float = 30.0
    """Seconds a request's body may take to arrive after its headers."""
    max_connections: int = 256
    """Open connections at most; the oldest is closed to make room for a new one."""


def build_app(gateway: Gateway, limits: Limits | None = None, guard: ConnectionGuard | None = None,
              pending: PendingBodies | None = None) -> web.Application:
    limits = limits or Limits()
    arrived = guard.arrived if guard is not None else (lambda _: None)
    answered = guard.answered if guard is not None else (lambda _: None)
    # Not a response signal: aiohttp answers a request it cannot parse (400) before any app sees it, and reads
    # this default as each answer goes out. It has no setting for it (aio-libs/aiohttp#3607).
    web_response.SERVER_SOFTWARE = SERVER_NAME
    middlewares = [body_guard(limits.body_timeout, arrived, pending, answered), json_not_found]
    if "web" not in gateway.adapters:
        middlewares.append(web_chat_off)
    app = web.Application(client_max_size=2 * 1024 * 1024, middlewares=middlewares)
    app.on_response_prepare.append(security_headers)
    health_reads = LiveReads(log, "/healthz")

    async def healthz(request: web.Request) -> web.Response:
        # 503 only for `down`: reconnecting is the SDKs' own business, and a load balancer or
        # health check that restarted on every dropped connection would make outages longer.
        connections = gateway.connections()
        down = [name for name, state in connections.items() if state.status == "down"]
        storage = gateway.storage()
        # Held by another process, the state database records nothing, so no message is answered: down, as
        # for a full disk.
        lock = write_lock.health(state_databases(gateway))
        unwell = bool(down) or storage["status"] == "down" or lock["status"] == "held"
        # An ended checkpointer shows, without a 503: chats are still answered, and a health check restarting
        # the gateway for it would cut off every turn running. A full disk it may lead to is `storage`'s 503.
        # Nor is catching up (`backlog`): the chats are answered, later; a load balancer turning them away, or a
        # health check restarting the gateway, would only make them wait longer.
        backlog = await health_reads.read_async("the backlog", gateway.metrics.backlog.read, None)
        return web.json_response({"status": "down" if unwell else "ok", "platforms": sorted(gateway.adapters),
                                  "down": down, "connections": {n: s.to_json() for n, s in connections.items()},
                                  "storage": storage, "wal_checkpointer": checkpointer.health(gateway.store.db),
                                  "write_lock": lock,
                                  "backlog": backlog.to_json() if backlog is not None else
                                  unread_json(health_reads.failing["the backlog"])},
                                 status=503 if unwell else 200)

    metrics_access = console_access(gateway)

    async def metrics(request: web.Request) -> web.Response:
        if isinstance(refusal := metrics_access.check(request), Refusal):
            return refused(request, refusal)
        await gateway.metrics.backlog.refresh()  # off the event loop: its gauges are then collected as read
        return web.Response(body=gateway.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    console = Console(gateway) if gateway.config.server.console else None
    if console is not None:
        app.router.add_routes(list(console.web_routes()))
    for adapter in gateway.adapters.values():
        app.router.add_routes(list(adapter.web_routes()))

    async def end_streams(app: web.Application) -> None:
        # Before the server waits for its handlers: an open event stream would hold it for a minute.
        if console is not None:
            await console.close_streams()
        for adapter in gateway.adapters.values():
            if isinstance(adapter, Streaming):
                await adapter.close_streams()

    app.on_shutdown.append(end_streams)
    if guard is not None:
        async def stream_started(request: web.Request, response: web.StreamResponse) -> None:
            if response.content_type == "text/event-stream":
                guard.streaming(request.protocol)

        app.on_response_prepare.append(stream_started)
    return app


def state_databases(gateway: Gateway) -> dict[str, SqliteDatabase]:
    """The gateway's databases by what they hold: one and the same unless the gateway was given a store of its
    own (`write_lock.health` names each)."""
    return {"the gateway store": gateway.store.db, "the lifecycle journal": gateway.host.database}


@web.middleware
async def json_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """404 as JSON ``{"error": ...}`` for a path under `API_PREFIXES` that no route takes: a client of those APIs
    reads every other error of theirs as JSON, and choked on aiohttp's plain text. The pages and their static
    files keep aiohttp's answer."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        if not _under(request.path, API_PREFIXES):
            raise
        return error_response(404, "no such path in this API")


@web.middleware
async def web_chat_off(request: web.Request, handler: Handler) -> web.StreamResponse:
    """`WEB_CHAT_OFF` as the 404 of a page under ``/chat`` (the gateway serves none of them while the web chat is
    off); its API paths keep `json_not_found`'s answer. With `PAGE_HEADERS`: no-cache, so that once the chat is
    enabled the browser asks again rather than showing this."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        if request.method not in ("GET", "HEAD") or not _under(request.path, ("/chat",)) or _under(
                request.path, API_PREFIXES):
            raise
        return web.Response(status=404, text=WEB_CHAT_OFF, headers=PAGE_HEADERS)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


class Server:
    """Runs the app on ``server.host``:``server.port`` (port 0 picks a free one).

    `bind` takes the port without serving yet, so a port in use is found before
    any platform starts taking messages; `start` binds if that was not done and
    then serves. ``limits`` default to the gateway's ``server.*`` settings.
    """

    def __init__(self, gateway: Gateway, host: str, port: int, *, limits: Limits | None = None) -> None:
        s = gateway.config.server
        if limits is None:
            limits = Limits(s.header_timeout_seconds, s.idle_timeout_seconds, s.body_timeout_seconds,
                            s.max_connections)
        self.limits = limits
        self.grace = s.shutdown_grace_seconds
        """What `stop` gives the requests in progress, the gateway's own grace: the two stop together."""
        self.guard = ConnectionGuard(lambda: self._runner.server if self._runner else None,
                                     limits.max_connections, limits.header_timeout)
        self.pending = PendingBodies()
        self.app = build_app(gateway, limits, self.guard, self.pending)
        self.host, self.port = host, port
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._cut = asyncio.Event()

    async def bind(self) -> None:
        """Listen on the address without accepting connections yet. Raises `StartupError`
        naming ``server.port`` or ``server.host`` when the address cannot be had. Idempotent."""
        if self._listener is not None:
            return
        # keepalive_timeout: the idle limit between requests (the guard times the first one).
        # lingering_time=0: after an answer to a request whose body is unread, close rather
        # than keep reading what a slow client sends. shutdown_timeout: how long aiohttp waits
        # for a handler at the stop (60 s of its own), only a backstop behind `stop`'s cut-off.
        runner = web.AppRunner(self.app, access_log=None, keepalive_timeout=self.limits.idle_timeout,
                               lingering_time=0, logger=ServerLog(), shutdown_timeout=self.grace + CUT_OFF_SECONDS)
        await runner.setup()
        assert runner.server is not None
        runner.server.request_handler = expect_guard(encoding_guard(runner.server.request_handler))
        self._runner = runner
        try:
            self._listener = await asyncio.get_running_loop().create_server(
                self.guard, self.host, self.port, reuse_address=True, start_serving=False)
        except OSError as exc:
            self._runner = None
            await runner.cleanup()
            raise bind_failed(self.host, self.port, exc) from exc
        except BaseException:
            self._runner = None
            await runner.cleanup()
            raise
        self.port = self._listener.sockets[0].getsockname()[1]

    async def start(self) -> None:
        await self.bind()
        assert self._listener is not None
        await self._listener.start_serving()
        log.info("listening on %s", self.url)

    @property
    def url(self) -> str:
        return f"http://{_address(self.host, self.port)}"

    async def stop(self) -> None:
        """Stop accepting, end the event streams, close idle connections; let the requests in
        progress finish until ``grace`` is over, or until `cut_off` if that comes first. Then
        cut off what is left: a request still waiting for its body is answered 503 at once
        (`gateway.http_guard.PendingBodies`), and a connection whose request has not ended
        `CUT_OFF_SECONDS` later (a client that does not read its answer) is closed. A client
        sending its body slowly holds the stop no longer than that, not the body's own limit.
        Idempotent."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self.guard.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await self._drain(runner)
        if listener is not None:
            await listener.wait_closed()

    def cut_off(self) -> None:
        """Nothing more can be handed over (the gateway has stopped): `stop` cuts off what is left
        of the requests now rather than when the grace is over. Idempotent; also before `stop`."""
        self._cut.set()

    async def _drain(self, runner: web.AppRunner) -> None:
        server = runner.server
        cleanup = asyncio.ensure_future(runner.cleanup())
        cut = asyncio.ensure_future(self._cut.wait())
        try:
            await asyncio.wait({cleanup, cut}, timeout=self.grace, return_when=asyncio.FIRST_COMPLETED)
            if not cleanup.done():
                self.pending.cut_off()
                await asyncio.wait({cleanup}, timeout=CUT_OFF_SECONDS)
            if not cleanup.done() and server is not None:
                for connection in list(server.connections):
                    if connection.transport is not None:
                        # Not close(), which waits to send what the client does not read: the write
                        # waiting for the client fails, and its handler ends.
                        connection.transport.abort()
            await cleanup
        finally:
            cut.cancel()
            cleanup.cancel()  # only if this stop was cancelled itself


def _address(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets (``[::1]:8080``), as URLs write it."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_failed(host: str, port: int, exc: OSError) -> StartupError:
    """Why the server could not listen on ``host``:``port``, as the operator reads it. A port its user may not
    listen on is refused at every start alike (``lasting``: no supervisor restart mends it); a port in use (its
    holder may be on its way out) or an address not there yet may mend by itself."""
    return StartupError(_bind_problem(host, port, exc), lasting=exc.errno in (errno.EACCES, errno.EPERM))


def _bind_problem(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"server.port: {_address(host, port)} is already in use (another switchboard, or another program); stop it,"
                " or set server.port to a free port")
    if exc.errno in (errno.EACCES, errno.EPERM):
        # Above 1023 it is no privileged port: a security policy (SELinux, a container's lowest unprivileged port)
        # refuses it, which a port number alone may not cure.
        fix = ("use a port above 1023, or put a proxy in front" if port < 1024 else
               "a security policy (SELinux, a container's net.ipv4.ip_unprivileged_port_start) refuses it: allow the"
               " port there, or use one it allows")
        return f"server.port: listening on port {port} is not permitted ({exc.strerror}); {fix}"
    return (f"server.host: cannot listen on {_address(host, port)} ({exc.strerror or exc}); set server.host to an address"
            " of this machine, such as 127.0.0.1 or 0.0.0.0")
