"""At ``server.max_connections``, the connections carrying event streams (a web chat page, the console) are
closed last: they are meant to last, so "the oldest connection" was always one of them, and anyone able to
open connections, with no token at all, cut every open page off (and again the moment each reconnected)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Limits, Server

CAP = 4


@pytest.fixture
async def served(tmp_path):
    raw = {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
           "platforms": {"web": {"enabled": True}}}
    config = config_from_mapping(raw).config
    gateway = Gateway(AgentHost(config), build_adapters(config))
    server = Server(gateway, "127.0.0.1", 0, limits=Limits(header_timeout=60, body_timeout=60, max_connections=CAP))
    await gateway.start()
    await server.start()
    yield gateway, server
    await server.stop()
    await gateway.stop(grace=0)


async def idle_connection(server: Server) -> asyncio.StreamWriter:
    """A connection that asked for /healthz, read its answer, and now idles (kept alive), as a stranger may."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
                 .partition(b":")[2])
    await asyncio.wait_for(reader.readexactly(length), 5)
    return writer


async def next_event(stream: aiohttp.StreamReader) -> str:
    """The kind of the stream's next event; "" when the connection was closed."""
    async with asyncio.timeout(5):
        while line := await stream.readline():
            if line.startswith(b"event: "):
                return line[len(b"event: "):].strip().decode()
    return ""


async def test_a_flood_of_idle_connections_closes_none_of_the_open_event_streams(served) -> None:
    gateway, server = served
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{server.url}/chat/api/events?chat=c1") as chat, \
                client.get(f"{server.url}/console/api/events") as console:
            assert (chat.status, console.status) == (200, 200)
            assert await next_event(chat.content) == "history"
            assert await next_event(console.content) == "state"
            idle = [await idle_connection(server) for _ in range(3 * CAP)]
            assert server.guard.evicted >= 2 * CAP  # the cap was reached, over and over

            await gateway.adapters["web"].typing("c1", None)
            assert await next_event(chat.content) == "typing"  # still open
            # Its close, had it come, came before the chat's event: the one stream is read as the other.
            assert console.content.exception() is None and not console.content.at_eof()
            for writer in idle:
                writer.close()
