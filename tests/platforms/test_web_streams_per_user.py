"""One user's event streams are capped (`platforms.web_events.STREAMS_PER_USER`): a script, or a loop of tabs,
opening thousands of them filled ``server.max_connections``, and every other user's page was cut off as it did
(the oldest stream closed for each new one), and again at each reconnect. A user's stream past the cap is refused
(429, saying why and what to do), and none of those open is touched: ending the user's oldest instead had its page
reconnect and end the next oldest, round and round for as long as they kept more tabs open. A closed tab makes room
at once. A user is the name the signing-in proxy gives; without one, everyone is the user ``web``, told apart by the
address they connect from (a network of 64 bits for IPv6, which a single host holds whole)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Limits, Server
from platforms.web import WebChatAdapter
from platforms.web_access import stream_owner
from platforms.web_events import STREAMS_PER_USER
from tests.polling import until
from tests.web_client import EventStream, Intake, serve_from

USER = "X-Forwarded-User"
REFUSED = (f"too many event streams open for this user ({STREAMS_PER_USER}): close some of the chat's tabs"
           " or windows")


@contextlib.asynccontextmanager
async def streams(http: aiohttp.ClientSession, base: str, count: int, *, chat: str = "c1",
                  headers: dict[str, str] | None = None) -> AsyncIterator[list[EventStream]]:
    """``count`` event streams opened one after another, each past its ``history``."""
    async with contextlib.AsyncExitStack() as opened:
        found = []
        for _ in range(count):
            stream = await opened.enter_async_context(EventStream(http, base, chat, headers=headers))
            await stream.until("history")
            found.append(stream)
        yield found


async def refused(http: aiohttp.ClientSession, base: str, *, chat: str = "c1",
                  headers: dict[str, str] | None = None) -> None:
    """Asserts that a new event stream is refused for want of room."""
    async with http.get(f"{base}/chat/api/events", params={"chat": chat}, headers=headers) as response:
        assert response.status == 429  # not read on: a stream opened would never end
        assert response.headers["Retry-After"] == "10"
        assert await response.json() == {"error": REFUSED}


async def test_one_user_opening_many_streams_cuts_off_no_stream_at_all(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, "platforms.web_events")
    cap = STREAMS_PER_USER + 10
    raw = {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
           "platforms": {"web": {"enabled": True, "user_header": USER, "allow_all": True}}}
    config = config_from_mapping(raw).config
    gateway = Gateway(AgentHost(config), build_adapters(config))
    server = Server(gateway, "127.0.0.1", 0, limits=Limits(header_timeout=60, body_timeout=60, max_connections=cap))
    await gateway.start()
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
                streams(http, server.url, 1, headers={USER: "alice"}) as (alice,), \
                streams(http, server.url, STREAMS_PER_USER, headers={USER: "mallory"}) as mallory:
            for _ in range(2 * cap):  # a script asking again and again
                await refused(http, server.url, headers={USER: "mallory"})
            web_chat = gateway.adapters["web"]
            await web_chat.typing("alice:c1", None)
            assert await alice.until("typing") == {}  # another user's page: still open
            await web_chat.typing("mallory:c1", None)
            for stream in mallory:  # and each of the user's own that were there first
                assert await stream.until("typing") == {}
            assert server.guard.evicted == 0  # nobody's connection was closed for want of room
            said = [r.getMessage() for r in caplog.records if r.name == "platforms.web_events"]
            assert said == [f"web chat: user 'mallory' has {STREAMS_PER_USER} event streams open, the most one user"
                            " may; refused another (its page tries again every 10 s)"]  # once, not per request
    finally:
        await server.stop()
        await gateway.stop(grace=0)


@contextlib.asynccontextmanager
async def served(adapter: WebChatAdapter, peer: list[str]) -> AsyncIterator[tuple[web.AppRunner, str]]:
    """The adapter's routes on a loopback port, each request seen as coming from ``peer[0]``: (runner, base url)."""
    runner, base = await serve_from(adapter, peer)
    try:
        yield runner, base
    finally:
        await adapter.stop()
        await runner.cleanup()


def hung_up(runner: web.AppRunner) -> bool:
    """Whether the server has seen a connection close under a stream it still serves."""
    assert runner.server is not None
    return any(c.transport is None for c in runner.server.connections)


async def test_a_stream_closed_makes_room_at_once(tmp_path) -> None:
    intake = Intake()
    # Keep-alives an hour apart: a stream notices its page gone at one, far later than this test's timeouts.
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path, keep_alive=3600, check_host=False)
    await adapter.start(intake.take)
    async with served(adapter, ["127.0.0.1"]) as (runner, base), \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
            streams(http, base, STREAMS_PER_USER - 1) as kept:
        async with EventStream(http, base, "c2") as closed:
            await closed.until("history")
            await refused(http, base, chat="c3")
        await until(lambda: hung_up(runner), timeout=2)
        async with EventStream(http, base, "c3") as next_one:
            await next_one.until("history")
            await refused(http, base)
            await adapter.typing("c1", None)
            for stream in kept:
                assert await stream.until("typing") == {}


async def test_without_a_user_header_each_address_is_capped_on_its_own(tmp_path) -> None:
    intake, peer = Intake(), ["127.0.0.1"]
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path, keep_alive=60, check_host=False)
    await adapter.start(intake.take)
    async with served(adapter, peer) as (_, base), \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
            streams(http, base, 1) as (first,):
        peer[0] = "::ffff:127.0.0.2"  # a socket listening on "::" names an IPv4 client so
        async with streams(http, base, STREAMS_PER_USER, chat="c2"):
            await refused(http, base, chat="c2")
            peer[0] = "127.0.0.1"  # another address: its own room, and its stream was left open
            async with streams(http, base, STREAMS_PER_USER - 1):
                await refused(http, base)
                await adapter.typing("c1", None)
                assert await first.until("typing") == {}


def test_a_user_is_their_name_or_else_their_address() -> None:
    assert stream_owner("alice", None) == stream_owner("alice", "10.0.0.5")
    assert stream_owner("alice", None) != stream_owner("bob", None)
    assert stream_owner(None, "127.0.0.2") == stream_owner(None, "::ffff:127.0.0.2")
    assert stream_owner(None, "127.0.0.2") != stream_owner(None, "127.0.0.1")
    # An IPv6 host picks its addresses from its network at will: one cap per network of 64 bits.
    assert stream_owner(None, "2001:db8:1:2::1") == stream_owner(None, "2001:db8:1:2:ffff::7")
    assert stream_owner(None, "2001:db8:1:2::1") != stream_owner(None, "2001:db8:1:3::1")
    # A name that is also an address is not that address's user.
    assert stream_owner("127.0.0.1", None) != stream_owner(None, "127.0.0.1")
