"""A 429 whose ``Retry-After`` is an HTTP-date (RFC 9110 allows one; a proxy in front of Slack sends it, Slack itself
seconds), read through the real slack-sdk from a loopback server that answers as such a proxy: the wait it names, not
the second a wait it could not read is taken for."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from platforms.base import RateLimited
from platforms.slack_errors import translate_exception


@pytest.fixture
async def proxy() -> AsyncIterator[dict[str, str]]:
    """A server answering every call with a 429, ``ratelimited`` and the ``Retry-After`` the test puts in."""
    header: dict[str, str] = {}

    async def limited(request: web.Request) -> web.Response:
        return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers=header)

    app = web.Application()
    app.router.add_post("/api/{method}", limited)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    header["base"] = f"http://127.0.0.1:{runner.addresses[0][1]}/api/"
    yield header
    await runner.cleanup()


async def _refusal(proxy: dict[str, str], retry_after: str) -> RateLimited:
    base = proxy.pop("base")
    proxy["Retry-After"] = retry_after
    client = AsyncWebClient(token="xoxb-test", base_url=base, retry_handlers=[])
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C1", text="the answer")
    error = translate_exception(caught.value, "chat.postMessage", "C1")
    assert isinstance(error, RateLimited)
    return error


async def test_an_http_date_retry_after_is_the_wait_it_names(proxy: dict[str, str]) -> None:
    # Read as no wait, it was a second: the gateway asked the proxy again each second for as long as it refused.
    error = await _refusal(proxy, email.utils.formatdate(time.time() + 30, usegmt=True))
    assert 28 <= error.retry_after <= 31


async def test_an_http_date_already_past_is_no_wait(proxy: dict[str, str]) -> None:
    error = await _refusal(proxy, email.utils.formatdate(time.time() - 30, usegmt=True))
    assert error.retry_after == 0.0
