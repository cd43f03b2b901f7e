"""The console's event streams are capped per address, as the web chat's are per user
(`platforms.web_events.STREAMS_PER_USER`): uncapped, anyone with the console token (or any local process, on
loopback) opening streams in a loop filled ``server.max_connections``, and every other page, the web chat's too,
was closed to make room. One past the cap is refused (429, saying why), none of those open is touched, another
address keeps its own room, and a closed stream makes room at once. The console has one user: the address a
stream comes from tells its clients apart (`platforms.web_access.stream_owner`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.console.routes import STREAMS_REFUSED, Console
from gateway.server import Limits, Server
from gateway.testing import RecordingAdapter, make_config
from platforms.web_events import STREAMS_PER_USER
from tests.gateway.observing import served
from tests.polling import until

TEXT = (f"too many console streams open from this address ({STREAMS_PER_USER}): close some of the console's tabs"
        " or windows")
OTHER_ADDRESS = "127.0.0.2"  # loopback too (the console answers only this machine without a token), another client
TOKEN = "console-token-0123456789"


async def next_state(response: aiohttp.ClientResponse) -> dict[str, Any]:
    lines: list[str] = []
    while True:
        line = (await response.content.readline()).decode().rstrip("\n")
        if line and not line.startswith(":"):
            lines.append(line)
        elif not line and lines:
            assert lines[0] == "event: state"
            return json.loads(lines[1].removeprefix("data: "))


@contextlib.asynccontextmanager
async def streams(http: aiohttp.ClientSession, base: str, count: int) -> AsyncIterator[list[aiohttp.ClientResponse]]:
    """``count`` console streams opened one after another, each past its first state."""
    async with contextlib.AsyncExitStack() as opened:
        found = []
        for _ in range(count):
            response = await opened.enter_async_context(http.get(f"{base}/console/api/events"))
            assert response.status == 200, await response.text()
            await next_state(response)
            found.append(response)
        yield found


async def refused(http: aiohttp.ClientSession, base: str) -> None:
    async with http.get(f"{base}/console/api/events") as response:
        assert response.status == 429  # not read on: a stream opened would never end
        assert response.headers["Retry-After"] == "10"
        assert await response.json() == {"error": TEXT}


def sessions(state: dict[str, Any]) -> list[str]:
    return [s["chat_id"] for s in state["sessions"]]


async def test_one_address_past_the_cap_is_refused_and_cuts_no_other_page_off(tmp_path, gateways) -> None:
    assert STREAMS_REFUSED == TEXT
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    cap = STREAMS_PER_USER + 10
    server = Server(gateway, "127.0.0.1", 0, limits=Limits(header_timeout=60, body_timeout=60, max_connections=cap))
    await server.start()
    try:
        from_elsewhere = aiohttp.TCPConnector(limit=0, local_addr=(OTHER_ADDRESS, 0))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
                aiohttp.ClientSession(connector=from_elsewhere) as elsewhere, \
                streams(elsewhere, server.url, 1) as (other,), \
                streams(http, server.url, STREAMS_PER_USER) as mine:
            for _ in range(2 * cap):  # a script asking again and again
                await refused(http, server.url)
            async with streams(elsewhere, server.url, 1):  # another address has room of its own
                pass
            await chat.say("hello", chat="c7")
            for response in [other, *mine]:  # every page open before is still served
                while sessions(state := await next_state(response)) != ["c7"]:
                    assert sessions(state) == []
            assert server.guard.evicted == 0  # nobody's connection was closed for want of room
    finally:
        await server.stop()


async def test_streams_asked_for_all_at_once_are_capped_too(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
            contextlib.AsyncExitStack() as opened:
        answers = await asyncio.gather(*(opened.enter_async_context(http.get(f"{server.url}/console/api/events"))
                                         for _ in range(2 * STREAMS_PER_USER)))
        assert sorted(r.status for r in answers) == [200] * STREAMS_PER_USER + [429] * STREAMS_PER_USER


@contextlib.asynccontextmanager
async def console_served(console: Console, peer: list[str]) -> AsyncIterator[str]:
    """``console``'s routes on a free loopback port, each request seen as coming from ``peer[0]``: the base url."""
    @web.middleware
    async def from_peer(request: web.Request, handler: Handler) -> web.StreamResponse:
        return await handler(request.clone(remote=peer[0]))

    app = web.Application(middlewares=[from_peer])
    app.router.add_routes(list(console.web_routes()))
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await console.close_streams()
        await runner.cleanup()


async def test_a_stream_closed_makes_room_at_once(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    # Keep-alives an hour apart: a stream would notice its page gone only at its next write.
    console = Console(gateway, interval=0.01, keep_alive=3600)
    async with console_served(console, ["127.0.0.1"]) as base, \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
            streams(http, base, STREAMS_PER_USER - 1) as kept, contextlib.AsyncExitStack() as opened:
        async with streams(http, base, 1) as (closed,):
            await next_state(kept[0])  # the refresher's first look: nothing more is written while nothing changes
            await refused(http, base)
            closed.close()

        async def opens() -> aiohttp.ClientResponse | None:
            response = await opened.enter_async_context(http.get(f"{base}/console/api/events"))
            if response.status == 200:
                return response
            response.close()
            return None

        await next_state(await until(opens, timeout=5, every=0.05))
        await refused(http, base)


async def test_an_ipv6_network_of_64_bits_is_one_address(tmp_path, gateways) -> None:
    # A host picks its IPv6 addresses in its network at will: a cap per address would be no cap.
    gateway = await gateways(make_config(tmp_path, server={"console_token": TOKEN}), [RecordingAdapter()])
    peer = ["2001:db8:1:2::1"]
    async with console_served(Console(gateway), peer) as base, \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                  headers={"Authorization": f"Bearer {TOKEN}"}) as http, \
            streams(http, base, STREAMS_PER_USER):
        peer[0] = "2001:db8:1:2:ffff::7"
        await refused(http, base)
        peer[0] = "2001:db8:1:3::1"  # another network
        async with streams(http, base, 1):
            pass
