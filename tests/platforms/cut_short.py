"""`cut_short`: a POST whose sender hangs up before its body is whole, to a loopback server whose
`Handled` middleware tells when its handler started and when it was over."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web


class Handled:
    """``middleware`` for aiohttp: ``started`` once a handler runs, ``over`` once it returned or raised
    (and aiohttp, before the test's next step, logged what it raised)."""

    def __init__(self) -> None:
        self.started, self.over = asyncio.Event(), asyncio.Event()

        @web.middleware
        async def middleware(request: web.Request,
                             handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
            self.started.set()
            try:
                return await handler(request)
            finally:
                self.over.set()

        self.middleware = middleware


async def cut_short(url: str, headers: dict[str, str], handled: Handled) -> None:
    """POST to ``url`` announcing 1000 bytes, send a few, and hang up once the handler is reading."""
    where = urlsplit(url)
    _, writer = await asyncio.open_connection(where.hostname, where.port)
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    writer.write(f"POST {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Length: 1000\r\n{lines}\r\n".encode()
                 + b'{"update_id": 1')
    await writer.drain()
    await handled.started.wait()
    writer.close()
    await writer.wait_closed()
    await handled.over.wait()
