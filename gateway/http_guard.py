"""What keeps slow, half-sent and abandoned requests from taking the HTTP server down.

Four limits, from `gateway.config.sections.ServerSettings`:

- **Headers** (``header_timeout_seconds``): a connection that has not sent a
  complete request line and headers this long after it opened is closed,
  however slowly it trickles bytes (`ConnectionGuard`).
- **Idle** (``idle_timeout_seconds``): a kept-alive connection waiting for its
  next request is closed after this long (aiohttp's keep-alive timer). It is
  longer than clients keep idle connections (aiohttp's client: 15 s), so a
  client never reuses a connection the server has just closed.
- **Body** (``body_timeout_seconds``): a body that has not fully arrived this
  long after its headers is cut off: the handler's read fails, the client gets
  ``408`` and the connection is closed (aiohttp's lingering read is off, so
  nothing more is read from it).
- **Connections** (``max_connections``): at the cap, the connection open the
  longest is closed to make room for the new one. Legitimate requests here take
  milliseconds, so the oldest connections are the ones holding on: a flood of
  slow clients evicts itself and ``/healthz`` keeps answering. Event streams (a
  web chat page, the console) are the exception, meant to last: they are closed
  only once no other connection is left to close (`ConnectionGuard.streaming`).

A body still coming in when the server's stop cuts off the requests left (`PendingBodies`)
is answered ``503``, as one that came after the stop would be, rather than waited for up
to the body's limit.

A client that hangs up mid-request, and a request too malformed to parse (aiohttp
answers it 400), are each logged as one line, not a traceback (`ServerLog`). Each of these lines
names the client's address, which a flood changes at will (an IPv6 network's addresses): each kind
is logged once, then counted for ten minutes (`platforms.repeated_warnings`). An
``Expect`` header other than ``100-continue`` is answered 417 before aiohttp sees it
(`expect_guard`). A body in a ``Content-Encoding`` other than gzip or deflate is answered 415
in JSON, on every path, saying which encodings are taken (`encoding_guard`, `RefusingUndecodable`).

Every answer, these included, carries `SECURITY_HEADERS` (`security_headers`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType

from aiohttp import hdrs, web
from aiohttp.http_exceptions import ContentEncodingError, HttpProcessingError
from aiohttp.web_protocol import RequestHandler

from platforms.not_recorded import STOPPING, STOPPING_RETRY_AFTER
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("gateway.server")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


SECURITY_HEADERS: Mapping[str, str] = MappingProxyType({"X-Content-Type-Options": "nosniff"})
"""On every answer: no browser may take a JSON answer or the metrics for HTML or a script, guessing from what a
client put in it (a chat's text, a name echoed in an error)."""


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An ``on_response_prepare`` signal: `SECURITY_HEADERS` on every answer the app gives, its event streams and
    errors too. The answers made before the app (`expect_guard`, `encoding_guard`, a request aiohttp cannot
    parse) carry them from where they are made."""
    response.headers.update(SECURITY_HEADERS)


class BodyTimeout(Exception):
    """Set on a request's body stream when it did not arrive in time: the handler's read raises it."""


class BodyCutOff(Exception):
    """Set on a request's body stream when the server's stop cut it off: the handler's read raises it."""


class PendingBodies:
    """The requests whose bodies are still coming in, as `body_guard` sees them. Once `cut_off`
    (the server is stopping and nothing can be handed over any more), each of them, and any that
    comes later, is answered 503 at once instead of waiting for the rest of its body."""

    def __init__(self) -> None:
        self._requests: dict[int, web.Request] = {}  # by id: a request is a mapping, not hashable
        self.cut = False

    def add(self, request: web.Request) -> None:
        if self.cut:
            _fail(request, BodyCutOff())
        else:
            self._requests[id(request)] = request

    def discard(self, request: web.Request) -> None:
        self._requests.pop(id(request), None)

    def cut_off(self) -> None:
        """Idempotent. A body that has arrived meanwhile is left to its handler."""
        self.cut = True
        requests, self._requests = list(self._requests.values()), {}
        for request in requests:
            _fail(request, BodyCutOff())


def body_guard(body_timeout: float, arrived: Callable[[RequestHandler], None] = lambda _: None,
               pending: PendingBodies | None = None, answered: Callable[[RequestHandler], None] = lambda _: None,
               ) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """The outermost middleware: a deadline for the body, a body cut off by the stop answered 503,
    and hang-ups as one line. ``arrived`` hears of each connection whose request's headers came in
    complete, ``answered`` of each whose request's handler has returned (an event stream has ended);
    ``pending`` is told of the requests whose bodies are still coming in."""
    pending = pending or PendingBodies()
    said = RepeatedWarnings(log, level=logging.INFO)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        arrived(request.protocol)
        timer = None
        if not request.content.is_eof():
            timer = asyncio.get_running_loop().call_later(body_timeout, _fail, request, BodyTimeout())
            pending.add(request)
        try:
            return await handler(request)
        except BodyTimeout:
            said.warning("body timeout", "%s %s from %s: body not received within %g s (server.body_timeout_seconds);"
                         " closed", request.method, request.rel_url.path, request.remote, body_timeout)
            response = web.json_response({"error": f"request body not received within {body_timeout:g} s"},
                                         status=408)
            response.force_close()
            return response
        except BodyCutOff:
            said.warning("cut off", "%s %s from %s: body not received before the stop; answered 503",
                         request.method, request.rel_url.path, request.remote)
            response = web.json_response({"error": STOPPING}, status=503,
                                         headers={"Retry-After": str(STOPPING_RETRY_AFTER)})
            response.force_close()
            return response
        except (ConnectionError, web.RequestPayloadError) as exc:
            if not _gone(request) and isinstance(exc, web.RequestPayloadError):
                # A malformed body (bad chunking, wrong Content-Length): the client's mistake, not ours.
                response = web.json_response({"error": "malformed request body"}, status=400)
                response.force_close()
                return response
            if not _gone(request):
                raise
            said.warning("hung up", "client %s hung up during %s %s", request.remote, request.method,
                         request.rel_url.path)
            return web.Response(status=499)  # nobody is left to read it
        finally:
            answered(request.protocol)
            if timer is not None:
                timer.cancel()
                pending.discard(request)

    return guard


def _fail(request: web.Request, exc: Exception) -> None:
    if not request.content.is_eof():
        request.content.set_exception(exc)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def expect_guard(handler: Handler) -> Handler:
    """Wraps the server's request handler (``web.Server.request_handler``): an ``Expect`` other
    than ``100-continue`` gets 417. aiohttp answers it before any middleware, with the value in
    its text, and a value that is not UTF-8 cannot be encoded there: a 500 and an ERROR
    traceback that anyone could provoke, on any path."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        expect = request.headers.get(hdrs.EXPECT)
        if expect and request.version >= (1, 1) and expect.lower() != "100-continue":
            response = web.json_response({"error": "only Expect: 100-continue is supported"}, status=417,
                                         headers=SECURITY_HEADERS)
            response.force_close()  # a client that expected something else may be sending its body
            return response
        return await handler(request)

    return guarded


DECODED = ("gzip", "deflate")
"""The ``Content-Encoding``s a body may come in: those aiohttp decodes with the standard library alone. The
same whatever decoders happen to be installed."""


def encoding_guard(handler: Handler) -> Handler:
    """Wraps the server's request handler, as `expect_guard` does: a body in a ``Content-Encoding`` aiohttp
    leaves undecoded (``compress``, ``x-gzip``, two of them: ``gzip, br``) would reach the routes still
    encoded, to be refused as a bad signature or as not JSON. It gets the 415 of `unsupported_encoding`
    first, on any path; ``identity`` and a request without a body pass."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        coding = ", ".join(request.headers.getall(hdrs.CONTENT_ENCODING, ())).strip()
        if coding and coding.lower() not in ("identity", *DECODED) and request.body_exists:
            return unsupported_encoding(coding)
        return await handler(request)

    return guarded


class RefusingUndecodable(RequestHandler):
    """aiohttp's handler of a connection, but a body in brotli or zstd (whose decoders are not installed)
    gets the JSON 415 of `unsupported_encoding`: aiohttp refuses it as it parses the headers, before any
    handler or middleware, with a 400 in plain text telling the client to install a Python package
    (``Please install `Brotli```). `ConnectionGuard` makes each connection's handler one."""

    __slots__ = ()  # aiohttp's layout: a handler aiohttp made can be turned into one

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        # Only the parse of the headers gets here with it: a body that fails to decode fails the handler's read.
        if status != 400 or not isinstance(exc, ContentEncodingError):
            response = super().handle_error(request, status, exc, message)
            response.headers.update(SECURITY_HEADERS)  # its text may quote what the client sent
            return response
        # The request aiohttp hands over has no headers: its error names the encoding ("… brotli (br). …").
        named = re.search(r"\(([a-z]+)\)", exc.message or "")
        return unsupported_encoding(named.group(1) if named else None)


def unsupported_encoding(coding: str | None) -> web.Response:
    """415 in JSON naming the encodings taken, as ``Accept-Encoding`` does too (RFC 9110 §15.5.16). The body
    is not read: its connection is closed."""
    shown = coding if coding and len(coding) <= 40 and coding.isascii() and coding.isprintable() else None
    error = (f"Content-Encoding {shown}" if shown else "this Content-Encoding") + (
        " is not supported; send the body as gzip, deflate or uncompressed")
    response = web.json_response({"error": error}, status=415,
                                 headers={**SECURITY_HEADERS, hdrs.ACCEPT_ENCODING: ", ".join(DECODED)})
    response.force_close()
    return response


class ConnectionGuard:
    """The protocol factory for ``loop.create_server``: at most ``limit`` connections, and
    each must deliver its first request's headers within ``header_timeout`` seconds.

    Wraps aiohttp's ``web.Server`` (the runner's ``server``), which tracks its
    connections in the order they were made; `arrived` is told (by `body_guard`)
    when a connection's request is complete, `streaming` when its answer is an event stream, and
    `answered` when that answer has ended.
    """

    def __init__(self, server: Callable[[], web.Server | None], limit: int, header_timeout: float) -> None:
        self._server = server
        self.limit = limit
        self.header_timeout = header_timeout
        self.evicted = 0
        self._waiting: dict[RequestHandler, asyncio.TimerHandle] = {}  # no first request yet
        self._streams: set[RequestHandler] = set()
        self._evictions = RepeatedWarnings(log)  # a flood of connections evicts one per connection
        self._said = RepeatedWarnings(log, level=logging.INFO)

    def __call__(self) -> RequestHandler:
        server = self._server()
        if server is None:
            raise RuntimeError("the HTTP server is not set up")
        # Closed ones stay listed until their transport reports the loss: count only the open.
        connections = [c for c in server.connections if c.transport is not None and not c.transport.is_closing()]
        self._streams.intersection_update(connections)
        # Streams last: the oldest connections otherwise, anyone who opened connections (no token needed) cut
        # every page off, and again as each reconnected.
        connections.sort(key=lambda c: c in self._streams)  # stable: the oldest first within each
        for oldest in connections[: max(0, len(connections) - self.limit + 1)]:
            self.evicted += 1
            self._evictions.warning("evicted", "server.max_connections (%d) reached: closing the oldest connection"
                                    " to make room", self.limit)
            oldest.force_close()
        handler = server()
        # aiohttp's server makes the handler itself, and its slots leave no method to override on the instance.
        handler.__class__ = RefusingUndecodable
        loop = asyncio.get_running_loop()
        self._waiting[handler] = loop.call_later(self.header_timeout, self._expire, handler)
        return handler

    def arrived(self, handler: RequestHandler) -> None:
        timer = self._waiting.pop(handler, None)
        if timer is not None:
            timer.cancel()

    def streaming(self, handler: RequestHandler) -> None:
        """The connection's answer is an event stream: closed to make room only once nothing else is left.
        Only requests that passed their access checks get a stream, so a stranger cannot mark their own."""
        self._streams.add(handler)

    def answered(self, handler: RequestHandler) -> None:
        self._streams.discard(handler)  # idle now, or taking its next request

    def _expire(self, handler: RequestHandler) -> None:
        if self._waiting.pop(handler, None) is not None and handler.transport is not None:
            self._said.warning("header timeout", "a client sent no complete request within %g s"
                               " (server.header_timeout_seconds); closed", self.header_timeout)
            handler.force_close()

    def close(self) -> None:
        """Cancel the pending deadlines (the server is stopping)."""
        for timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()
        self._streams.clear()


class ServerLog(logging.LoggerAdapter):
    """aiohttp's server logger (pass as the runner's ``logger``), minus the tracebacks of
    requests that were the client's fault: aiohttp logs every request it cannot parse at
    ERROR with a traceback, which anyone can make it do thousands of times a second. Those
    become one INFO line; everything else passes unchanged."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        super().__init__(logger or logging.getLogger("aiohttp.server"), {})
        self._said = RepeatedWarnings(log, level=logging.INFO)

    def log(self, level: int, msg: object, *args: object, **kwargs: object) -> None:
        exc = kwargs.get("exc_info")
        if isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 0) < 500:
            peer = args[0] if args else "?"
            reason = (exc.message or type(exc).__name__).strip().splitlines()[0]
            self._said.warning((exc.code, reason), "bad request from %s (answered %d): %s", peer, exc.code, reason)
            return
        super().log(level, msg, *args, **kwargs)
