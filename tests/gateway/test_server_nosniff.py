"""Every answer of the HTTP server says ``X-Content-Type-Options: nosniff``, not only the pages: the JSON of the
web chat's, console's and webhook platform's APIs, their errors, the event streams, health and metrics, and the
answers made before any route (a 404, a 417, a 415, a request aiohttp cannot parse)."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.web_client import WebChat

SECRET = "nosniff-test-secret-0123"


async def _raw(chat: WebChat, request: bytes) -> bytes:
    """The head of the server's answer to ``request``, sent as it is."""
    assert chat.server is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", chat.server.port)
    writer.write(request)
    async with asyncio.timeout(5):
        reply = await reader.read()
    writer.close()
    return reply.partition(b"\r\n\r\n")[0].lower()


async def test_every_answer_says_nosniff(tmp_path) -> None:
    chat = await WebChat(tmp_path, platforms={"web": {"enabled": True},
                                              "webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}}
                         ).start()
    try:
        async with aiohttp.ClientSession() as http:
            for method, path, status in (
                    ("GET", "/chat/api/history?chat=c1", 200), ("GET", "/chat/api/history?chat=no!", 400),
                    ("POST", "/chat/api/messages", 415), ("PUT", "/chat/api/history", 405),
                    ("GET", "/chat/api/nope", 404), ("GET", "/console/api/state", 200), ("GET", "/healthz", 200),
                    ("GET", "/metrics", 200), ("POST", "/webhooks/hook", 401), ("GET", "/nowhere", 404),
                    ("GET", "/chat", 200), ("GET", "/chat/api/events?chat=c1", 200),
                    ("GET", "/console/api/events", 200)):
                async with http.request(method, chat.base + path) as response:
                    assert response.status == status, path
                    assert response.headers.get("X-Content-Type-Options") == "nosniff", path
        for request, status in (
                (b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nExpect: later\r\nConnection: close\r\n\r\n", b" 417 "),
                (b"POST /webhooks/hook HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: compress\r\n"
                 b"Content-Length: 2\r\nConnection: close\r\n\r\n{}", b" 415 "),
                (b"POST /webhooks/hook HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: br\r\n"
                 b"Content-Length: 2\r\nConnection: close\r\n\r\n{}", b" 415 "),
                (b"NOT A REQUEST\r\n\r\n", b" 400 ")):
            head = await _raw(chat, request)
            assert status in head.split(b"\r\n")[0] and b"\r\nx-content-type-options: nosniff" in head, request
    finally:
        await chat.stop()
