"""A webhook ``chat_id`` sent as a number: one number is one chat, however JSON spells it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import Accepted, Inbound
from platforms.fakes.webhook_receiver import signed_post
from platforms.webhook import WebhookAdapter

SECRET = "numbers-secret-0123456789"
NOW = 1_700_000_000.0


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, list[Inbound]]]:
    received: list[Inbound] = []

    async def sink(inbound: Inbound) -> Accepted:
        received.append(inbound)
        return Accepted(f"turn-{len(received)}", f"webhook:{inbound.chat_id}")

    adapter = WebhookAdapter({"alerts": (SECRET, None)}, clock=lambda: NOW)
    await adapter.start(sink)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/webhooks/alerts", received
    finally:
        await runner.cleanup()
        await adapter.stop()


async def post(url: str, body: bytes) -> tuple[int, dict]:
    reply = await signed_post(url, SECRET, body, timestamp=str(int(NOW)))
    return reply.status, reply.json()


@pytest.mark.parametrize("spelling", [b"100", b"100.0", b"1e2", b"1.0E2", b"100.00"])
async def test_a_whole_number_is_the_same_chat_however_spelled(
    served: tuple[str, list[Inbound]], spelling: bytes
) -> None:
    url, received = served
    status, _ = await post(url, b'{"text": "hi", "chat_id": ' + spelling + b"}")
    assert status == 202
    assert [i.chat_id for i in received] == ["alerts:100"]


@pytest.mark.parametrize(("number", "chat"), [(b"1.5", "1.5"), (b"-0.25", "-0.25"), (b"1e-3", "0.001")])
async def test_a_fraction_is_a_chat_of_its_own(served: tuple[str, list[Inbound]], number: bytes, chat: str) -> None:
    url, received = served
    status, _ = await post(url, b'{"text": "hi", "chat_id": ' + number + b"}")
    assert status == 202
    assert [i.chat_id for i in received] == [f"alerts:{chat}"]
