"""Webhook deliveries to ``deliver_url`` as a receiver meets them: verified by the documented recipe, a
hung receiver holding only its own route, redirects said to be refused, ``Retry-After`` dates read as GMT."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Iterator
from email.utils import formatdate

import pytest
from aiohttp import web

from platforms.base import NetworkError, Outbound, RateLimited
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import ROUTE_CONNECTIONS, Route, WebhookAdapter
from tests.platforms.test_webhook_adapter import NOW, OTHER_SECRET, SECRET, Sink, serve


def outbound(chat_id: str, text: str = "done", key: str | None = None) -> Outbound:
    return Outbound(chat_id=chat_id, thread_id=None, text=text, turn_id="turn-1", sequence=0,
                    idempotency_key=key or f"{chat_id}:turn-1:0")


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        yield receiver


@pytest.fixture
async def adapter(receiver: WebhookReceiver) -> AsyncIterator[WebhookAdapter]:
    adapter = WebhookAdapter({"alerts": Route(SECRET, receiver.url)}, clock=lambda: NOW, delivery_timeout=5.0)
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


async def test_a_receiver_verifies_a_delivery_with_the_documented_recipe(
    adapter: WebhookAdapter, receiver: WebhookReceiver
) -> None:
    await adapter.send(outbound("alerts:ops", text="naïve café ✓"))
    [delivery] = receiver.deliveries
    timestamp = delivery.headers["X-Switchboard-Timestamp"]
    expected = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + delivery.body, hashlib.sha256).hexdigest()
    assert delivery.headers["X-Switchboard-Signature"] == f"v1={expected}"
    assert abs(int(timestamp) - NOW) <= 300
    assert "naïve café ✓".encode() in delivery.body  # the raw body is UTF-8, not \\u escapes
    assert delivery.idempotency_key == "alerts:ops:turn-1:0"


async def test_a_hung_receiver_holds_its_own_routes_deliveries_only() -> None:
    release, arrived = asyncio.Event(), asyncio.Event()
    held = 0

    async def hung(request: web.Request) -> web.Response:
        nonlocal held
        held += 1
        if held == ROUTE_CONNECTIONS:
            arrived.set()
        await release.wait()
        return web.Response()

    async def chatty(request: web.Request) -> web.Response:
        return web.Response(text="x" * 1_000_000)  # a 2xx with a body: not read, not waited for

    # One host for both routes: the worst case, one receiver service with a path per route.
    runner, url = await serve(web.post("/hung", hung), web.post("/chatty", chatty))
    adapter = WebhookAdapter({"hung": (SECRET, f"{url}/hung"), "chatty": (OTHER_SECRET, f"{url}/chatty")},
                             delivery_timeout=60.0)
    await adapter.start(Sink())
    waiting = [asyncio.ensure_future(adapter.send(outbound(f"hung:{i}"))) for i in range(ROUTE_CONNECTIONS + 1)]
    try:
        await asyncio.wait_for(arrived.wait(), 10)
        await asyncio.wait_for(adapter.send(outbound("chatty:ops")), 5)  # bounded: it hung behind them
        assert held == ROUTE_CONNECTIONS  # the route's own bound: its next delivery waits for a slot
        release.set()
        await asyncio.wait_for(asyncio.gather(*waiting), 10)
        assert held == ROUTE_CONNECTIONS + 1
    finally:
        release.set()
        await asyncio.gather(*waiting, return_exceptions=True)
        await adapter.stop()
        await runner.cleanup()


async def test_a_redirect_is_refused_and_the_error_says_it_was_not_followed() -> None:
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPPermanentRedirect("http://elsewhere.invalid/hook?token=hidden")

    runner, url = await serve(web.post("/moved", moved))
    adapter = WebhookAdapter({"moved": (SECRET, f"{url}/moved")})
    await adapter.start(Sink())
    try:
        with pytest.raises(NetworkError, match=r"HTTP 308 \(a redirect: not followed") as info:
            await adapter.send(outbound("moved:ops"))
        assert "hidden" not in str(info.value) and "elsewhere" not in str(info.value)
    finally:
        await adapter.stop()
        await runner.cleanup()


@pytest.fixture
def two_hours_east(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Etc/GMT-2")  # POSIX sign: UTC+2
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("usegmt", [True, False], ids=["imf-fixdate", "asctime"])
async def test_a_retry_after_date_is_gmt_whatever_the_hosts_zone(
    adapter: WebhookAdapter, receiver: WebhookReceiver, two_hours_east: None, usegmt: bool
) -> None:
    # RFC 9110: every HTTP date is GMT, the asctime form included, which names no zone.
    in_30s = formatdate(NOW + 30, usegmt=True)
    if not usegmt:
        in_30s = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(NOW + 30))
    receiver.fail_next(1, status=503, retry_after=in_30s)
    with pytest.raises(RateLimited) as info:
        await adapter.send(outbound("alerts:ops"))
    assert info.value.retry_after == 30
