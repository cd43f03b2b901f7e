"""The web chat's and the webhook routes' APIs answer every error as JSON ``{"error": ...}`` (docs/platforms/web.md,
docs/platforms/webhook.md), aiohttp's own answers too: a method a path does not take was aiohttp's plain-text
405. Over loopback HTTP, the adapters' routes without a gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from platforms.base import Accepted, Inbound
from platforms.web import WebChatAdapter
from platforms.webhook import WebhookAdapter
from tests.web_client import serve

SECRET = "alerts-secret-0123456789"
FILE_ID = "A" * 24


async def accept(inbound: Inbound) -> Accepted:
    return Accepted(None, f"x|{inbound.chat_id}")


@pytest.fixture
async def web_chat(tmp_path: Path) -> AsyncIterator[tuple[WebChatAdapter, str]]:
    adapter = WebChatAdapter(files_dir=tmp_path / "web-files")
    await adapter.start(accept)
    runner, url = await serve(adapter)
    yield adapter, url
    await adapter.stop()
    await runner.cleanup()


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[WebhookAdapter, str]]:
    adapter = WebhookAdapter({"alerts": (SECRET, None)}, files_dir=tmp_path / "webhook-files")
    await adapter.start(accept)
    runner, url = await serve(adapter)
    yield adapter, url
    await adapter.stop()
    await runner.cleanup()


async def refused(http: aiohttp.ClientSession, method: str, url: str, allowed: str) -> None:
    async with http.request(method, url, data=b'{"text": "hi"}') as response:
        assert response.status == 405, (method, url)
        assert response.headers["Allow"] == allowed
        assert response.content_type == "application/json"
        if method != "HEAD":
            assert await response.json() == {"error": f"method not allowed here; this path takes {allowed}"}


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
async def test_the_web_chats_api_answers_a_method_it_does_not_take_in_json(web_chat, http, method) -> None:
    _, base = web_chat
    for path, allowed in (("/chat/api/messages", "POST"), ("/chat/api/history", "GET"),
                          ("/chat/api/events", "GET"), (f"/chat/api/files/{FILE_ID}", "GET")):
        await refused(http, method, f"{base}{path}?chat=c1", allowed)
    if method != "HEAD":
        await refused(http, "GET", f"{base}/chat/api/messages", "POST")


@pytest.mark.parametrize("method", ["PUT", "DELETE", "OPTIONS", "HEAD"])
async def test_the_webhook_routes_answer_a_method_they_do_not_take_in_json(webhook, http, method) -> None:
    _, base = webhook
    for path, allowed in (("/webhooks/alerts", "POST"), ("/webhooks/alerts/turns/t1", "GET"),
                          (f"/webhooks/alerts/files/{FILE_ID}", "GET")):
        await refused(http, method, base + path, allowed)
    await refused(http, "GET", f"{base}/webhooks/alerts", "POST")


async def test_the_methods_they_take_are_still_theirs(web_chat, webhook, http) -> None:
    _, base = web_chat
    async with http.get(f"{base}/chat/api/history", params={"chat": "c1"}) as response:
        assert (response.status, await response.json()) == (200, {"messages": []})
    message = {"chat": "c1", "text": "hi", "key": "key-0001"}
    async with http.post(f"{base}/chat/api/messages", json=message) as response:
        assert response.status == 202
    _, hook = webhook
    async with http.post(f"{hook}/webhooks/alerts", data=b"{}") as response:
        assert response.status == 401  # unsigned: the route's own check, not a 405
