"""What the gateway's HTTP server tells strangers: no software versions in any answer, and refused requests
logged once per reason rather than once each. Over a real server on loopback, with a real client."""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import pytest

from gateway.app import Gateway
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config
from platforms.web import WebChatAdapter
from platforms.web_access import Access
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER

WEB_TOKEN = "web-token-0123456789-abcdef"
CONSOLE_TOKEN = "console-token-0123456789-abcdef"
SECRET = "hook-secret-0123456789-abcdef"
WRONG = "guess-0123456789-abcdefghij"
REFUSALS = 50


@pytest.fixture
async def gateway(tmp_path, gateways) -> Gateway:
    config = make_config(tmp_path, server={"console_token": CONSOLE_TOKEN}, platforms={
        "web": {"enabled": True, "token": WEB_TOKEN},
        "webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}})
    return await gateways(config, build_adapters(config))


@pytest.fixture
async def server(gateway):
    served = Server(gateway, "127.0.0.1", 0)
    await served.start()
    yield served
    await served.stop()


async def raw(server: Server, request: bytes) -> bytes:
    """The head of the server's answer to ``request`` as sent, byte for byte."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(request)
        async with asyncio.timeout(5):
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()


async def test_no_answer_names_the_server_software_or_its_version(server):
    asks = [("GET", "/healthz", {}), ("GET", "/metrics", {"Authorization": f"Bearer {CONSOLE_TOKEN}"}),
            ("GET", "/metrics", {}), ("GET", "/console", {}), ("GET", "/chat", {}), ("GET", "/chat/api/history", {}),
            ("GET", "/chat/api/nothing", {}), ("GET", "/nothing", {}), ("DELETE", "/healthz", {}),
            ("POST", "/webhooks/hook", {}), ("POST", "/webhooks/unknown", {})]
    heads = []
    async with aiohttp.ClientSession() as http:
        for method, path, headers in asks:
            async with http.request(method, server.url + path, headers=headers) as response:
                heads.append((path, response.status, response.headers.getall("Server", [])))
    assert {status for _, status, _ in heads} >= {200, 401, 404, 405}
    assert [(path, said) for path, _, said in heads if said != ["switchboard"]] == []
    # Answered before any app sees the request: one aiohttp cannot parse, an Expect it does not take.
    for request, status in ((b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
                            (b"POST /webhooks/hook HTTP/1.1\r\nHost: x\r\nExpect: x\r\nContent-Length: 1\r\n\r\n",
                             b"417")):
        head = await raw(server, request)
        assert head.split(b" ")[1] == status and b"\r\nServer: switchboard\r\n" in head, head
        assert b"aiohttp" not in head and b"Python" not in head


def refused_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if " refused: " in r.getMessage()]


async def test_a_flood_of_refused_web_chat_requests_is_one_line_then_a_count(gateway, server, caplog):
    now = [0.0]
    web = next(a for a in gateway.adapters.values() if isinstance(a, WebChatAdapter))
    web.access = Access(token=WEB_TOKEN, clock=lambda: now[0])  # the configured check, on the test's clock
    caplog.set_level(logging.INFO, logger="platforms.web_access")
    async with aiohttp.ClientSession() as http:
        for i in range(REFUSALS):  # a scanner: a new path and a new guess each time
            async with http.get(f"{server.url}/chat/api/files/f{i}?chat=c&token={WRONG}{i}",
                                headers={"Authorization": f"Bearer {WRONG}{i}"}) as response:
                assert response.status == 401
        assert refused_lines(caplog) == ["web chat GET /chat/api/files/f0 refused: missing or wrong token"]
        now[0] += 600
        async with http.get(f"{server.url}/chat/api/history?chat=c") as response:
            assert response.status == 401
    assert refused_lines(caplog) == [
        "web chat GET /chat/api/files/f0 refused: missing or wrong token",
        f"web chat GET /chat/api/history refused: missing or wrong token (and {REFUSALS - 1} more like it in the"
        " last 600 s)"]
    assert {r.levelno for r in caplog.records if " refused: " in r.getMessage()} == {logging.INFO}
    assert WRONG not in caplog.text and WEB_TOKEN not in caplog.text


async def test_refused_console_and_metrics_requests_are_one_line_each(server, caplog):
    caplog.set_level(logging.INFO, logger="platforms.web_access")
    async with aiohttp.ClientSession() as http:
        for i in range(REFUSALS):
            for path in (f"/console/api/children/c{i}/stop", f"/metrics?x={i}"):
                method = "POST" if "stop" in path else "GET"
                async with http.request(method, server.url + path,
                                        headers={"Authorization": f"Bearer {WRONG}{i}"}) as response:
                    assert response.status == 401
    assert refused_lines(caplog) == ["console POST /console/api/children/c0/stop refused: missing or wrong token",
                                     "console GET /metrics refused: missing or wrong token"]
    assert WRONG not in caplog.text and CONSOLE_TOKEN not in caplog.text


async def test_a_flood_of_badly_signed_webhook_requests_is_one_line_per_reason(server, caplog):
    caplog.set_level(logging.INFO, logger="platforms.webhook")
    stamp = str(int(time.time()))
    async with aiohttp.ClientSession() as http:
        for i in range(REFUSALS):
            signed = {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: "v1=" + f"{i:064x}"}
            async with http.get(f"{server.url}/webhooks/hook/turns/t{i}", headers=signed) as response:
                assert response.status == 401
            async with http.post(f"{server.url}/webhooks/hook", json={"text": "hi"}, headers=signed) as response:
                assert response.status == 401
    assert refused_lines(caplog) == ["webhook GET /webhooks/hook/turns/t0 refused: bad signature"]
    assert [r.levelno for r in caplog.records if " refused: " in r.getMessage()] == [logging.WARNING]
    assert SECRET not in caplog.text

