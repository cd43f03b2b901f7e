"""A failed delivery's error says why in words an operator acts on (the receiver refused the connection, or did not
answer in time), never the URL, which may carry a token: ``ClientConnectorError`` alone was all the log said."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import NetworkError, Outbound
from platforms.webhook import Route, WebhookAdapter
from tests.platforms.test_webhook_adapter import SECRET, Sink

TOKEN = "tok-5e3c7a"


def outbound() -> Outbound:
    return Outbound(chat_id="alerts:ops", thread_id=None, text="done", turn_id="turn-1", sequence=0,
                    idempotency_key="alerts:ops:turn-1:0")


async def failure(deliver_url: str, timeout: float = 5.0) -> str:
    adapter = WebhookAdapter({"alerts": Route(SECRET, deliver_url)}, delivery_timeout=timeout)
    await adapter.start(Sink())
    try:
        with pytest.raises(NetworkError) as caught:
            await adapter.send(outbound())
    finally:
        await adapter.stop()
    return str(caught.value)


def closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: a connect is refused
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_receiver_that_refuses_the_connection_is_named_so() -> None:
    message = await failure(f"http://127.0.0.1:{closed_port()}/hook?token={TOKEN}")
    assert message == "webhook route 'alerts': delivery failed: ClientConnectorError (Connection refused)"


@pytest.fixture
async def silent() -> AsyncIterator[str]:
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", hang)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/hook?token={TOKEN}"
    release.set()
    await runner.cleanup()


async def test_a_receiver_that_does_not_answer_in_time_is_named_so(silent: str) -> None:
    message = await failure(silent, timeout=0.05)
    assert message == "webhook route 'alerts': delivery failed: TimeoutError (no answer within 0.05 s)"
    assert TOKEN not in message
