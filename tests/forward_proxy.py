"""`ForwardProxy`: an HTTP forward proxy on loopback, for tests of clients that go through one.

It takes absolute-form requests (``GET http://host/path``; ``GET ws://host/path`` opening a WebSocket)
and ``CONNECT host:port`` tunnels, and pipes the connection's bytes to that host. A request other than a
WebSocket's goes on as ``Connection: close``, so that every request comes on a connection of its own and
is in `ForwardProxy.requests`. A host under ``.invalid`` (RFC 2606: no resolver knows one) is reached at
127.0.0.1 on its port, by the proxy alone: a client that reached one went through the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

_HOP_BY_HOP = ("connection", "keep-alive")


class ForwardProxy:
    """``async with ForwardProxy() as proxy``: ``proxy.url`` to name in ``$http_proxy``; ``requests`` the
    request line of each (``GET http://…/path``, ``CONNECT host:port``), ``credentials`` its
    ``Proxy-Authorization`` (None without)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.credentials: list[str | None] = []
        self._server: asyncio.Server | None = None
        self._serving: set[asyncio.Task[None]] = set()
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for stream in list(self._open):  # its pipes then end, as when either side hangs up
            stream.transport.abort()
        await asyncio.gather(*self._serving)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        self._open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *fields = head.decode("latin-1").split("\r\n")
            fields = [f for f in fields if f]
            method, target, _ = line.split(" ")
            headers = {name.strip().lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)}
            self.requests.append(f"{method} {target}")
            self.credentials.append(headers.get("proxy-authorization"))
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                up_reader, upstream = await asyncio.open_connection(_address(host), int(port))
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                up_reader, upstream = await asyncio.open_connection(_address(parts.hostname or ""), parts.port or 80)
                if "upgrade" not in headers:
                    kept = [f for f in fields if f.partition(":")[0].strip().lower() not in _HOP_BY_HOP]
                    head = "\r\n".join([line, *kept, "Connection: close", "", ""]).encode("latin-1")
                upstream.write(head)  # absolute-form, which an HTTP server takes as the path it holds
            self._open.add(upstream)
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass  # a side hung up
        finally:
            writer.close()
            self._open.difference_update((writer, upstream))
            self._serving.discard(task)


def _address(host: str) -> str:
    return "127.0.0.1" if host.endswith(".invalid") else host


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.close()
