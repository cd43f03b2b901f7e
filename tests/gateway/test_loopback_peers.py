"""Without a token, ``/metrics`` and the console's API answer only connections from this machine, whatever the
request's headers say: a client elsewhere writes ``Host: localhost`` as easily as any other header, and with
``server.console: false`` a gateway listening on every address needs no token. Over loopback HTTP, the client
elsewhere made by the middleware reverse-proxy helpers use to name the client (``Request.clone(remote=…)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.app import Gateway
from gateway.server import Server
from gateway.testing import RecordingAdapter, make_config
from platforms.web_access import is_loopback

ELSEWHERE = "203.0.113.7"


@web.middleware
async def from_elsewhere(request: web.Request, handler: Handler) -> web.StreamResponse:
    """What the handlers see of a connection from another machine: its peer's address."""
    return await handler(request.clone(remote=ELSEWHERE))


@asynccontextmanager
async def served(gateway: Gateway, *middlewares: object) -> AsyncIterator[Server]:
    server = Server(gateway, "127.0.0.1", 0)
    server.app.middlewares.extend(middlewares)  # innermost: right before the routes' handlers
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def everywhere_without_console(tmp_path):
    return make_config(tmp_path, server={"host": "0.0.0.0", "console": False})


async def test_metrics_without_a_token_refuse_a_client_elsewhere_that_names_a_loopback_host(tmp_path, gateways):
    gateway = await gateways(everywhere_without_console(tmp_path), [RecordingAdapter()])
    async with served(gateway, from_elsewhere) as server, aiohttp.ClientSession() as http:
        for host in ("localhost", "127.0.0.1:8080", "[::1]"):
            async with http.get(f"{server.url}/metrics", headers={"Host": host}) as response:
                assert response.status == 403, host
                assert "server.console_token" in (await response.json())["error"]


async def test_metrics_without_a_token_still_answer_this_machine(tmp_path, gateways):
    gateway = await gateways(everywhere_without_console(tmp_path), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/metrics") as response:
            assert response.status == 200
            assert "switchboard_turns_running" in await response.text()


async def test_the_console_api_without_a_token_refuses_a_client_elsewhere(tmp_path, gateways):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    async with served(gateway, from_elsewhere) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/console/api/state", headers={"Host": "localhost"}) as response:
            assert response.status == 403
        async with http.post(f"{server.url}/console/api/outbox/1/dismiss", json={},
                             headers={"Host": "localhost"}) as response:
            assert response.status == 403


def test_an_ipv4_client_of_a_socket_listening_on_every_ipv6_address_is_local_when_it_is():
    # Such a socket (server.host "::") names 127.0.0.1 as ::ffff:127.0.0.1: a local scrape stays local.
    assert is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("::ffff:203.0.113.7")
