"""Review of ab96d9ba: a final refusal's answer, quoted in the log, never shows the deliver_url's token in the forms
a receiver echoes it (the token alone, the path without its query, the path JSON-escaped, percent-encoding in
another case), nor the start of a secret cut mid-character by the end of what is read; and a receiver trickling or
withholding its answer's body holds the delivery no longer than the delivery timeout. Real aiohttp on loopback."""

from __future__ import annotations

import asyncio
import string
import time

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from platforms.base import NotFound, Outbound
from platforms.webhook import Route, WebhookAdapter
from tests.platforms.test_webhook_adapter import serve

SECRET = "refusal-leak-secret-0123456789"
NOW = 1_700_000_000.0


def message() -> Outbound:
    return Outbound("hook:ops", None, "done", idempotency_key="t1:reply:0", turn_id="t1")


async def refused_with(body: str, path: str, route_path: str = "/hooks/{tail:.*}", secret: str = SECRET) -> str:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=422, text=body)

    runner, url = await serve(web.post(route_path, refuse))
    adapter = WebhookAdapter({"hook": Route(secret, f"{url}{path}")}, clock=lambda: NOW)
    try:
        with pytest.raises(NotFound) as info:
            await adapter.send(message())
    finally:
        await adapter.stop()
        await runner.cleanup()
    return str(info.value)


@pytest.mark.parametrize(("path", "body", "token"), [
    # The token alone: a receiver naming the token it does not know.
    ("/hooks/in?token=t0ken-t0ken-t0ken", '{"error": "unknown token t0ken-t0ken-t0ken"}', "t0ken"),
    # The path without its query (Spring Boot's error body has "path", never the query).
    ("/hooks/9f8e7d6c5b4a3210?source=switchboard",
     '{"status": 422, "error": "Unprocessable Entity", "path": "/hooks/9f8e7d6c5b4a3210"}', "9f8e7d6c5b4a"),
    # The path JSON-escaped (PHP's json_encode writes \/).
    ("/hooks/9f8e7d6c5b4a3210/in", '{"path": "\\/hooks\\/9f8e7d6c5b4a3210\\/in"}', "9f8e7d6c5b4a"),
    # Percent-encoding in the other case.
    ("/hooks/in?token=ab%2Fcd-0123456789", '{"error": "bad token ab%2fcd-0123456789"}', "0123456789"),
])
async def test_the_deliver_urls_token_is_never_quoted(path: str, body: str, token: str) -> None:
    said = await refused_with(body, path)
    assert "not sent again; its answer: " in said
    assert token not in said


async def test_a_secret_cut_mid_character_by_the_read_is_not_quoted() -> None:
    secret = "abcdefghijklmnopqrs\u00e9-rest-of-it-0123"
    # 780 spaces and 19 ASCII characters, then the first byte of é: the read stops at 800 bytes inside it.
    said = await refused_with(" " * 780 + secret, "/hooks/in", secret=secret)
    assert "abcdefgh" not in said


async def trickle(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=422)
    await response.prepare(request)
    while True:
        await response.write(b"x")
        await asyncio.sleep(0.2)


async def withhold(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=422, headers={"Content-Length": "100"})
    await response.prepare(request)
    await response.write(b"partial ")
    await asyncio.sleep(60)
    return response


@pytest.mark.parametrize("handler", [trickle, withhold])
async def test_a_slow_answer_body_is_read_no_longer_than_the_delivery_timeout(handler) -> None:
    runner, url = await serve(web.post("/hook", handler))
    adapter = WebhookAdapter({"hook": Route(SECRET, f"{url}/hook")}, clock=lambda: NOW, delivery_timeout=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(NotFound) as info:
            await asyncio.wait_for(adapter.send(message()), 8.0)
    finally:
        await adapter.stop()
        await runner.cleanup()
    assert time.monotonic() - started < 4.0
    assert "not sent again; its answer: " in str(info.value)


class _Content:
    def __init__(self, body: bytes, sizes: list[int]) -> None:
        self.body, self.sizes = body, sizes

    async def read(self, n: int) -> bytes:
        size = min(n, self.sizes.pop() if self.sizes else n)
        chunk, self.body = self.body[:size], self.body[size:]
        return chunk


class _Answer:
    def __init__(self, body: bytes, sizes: list[int]) -> None:
        self.content = _Content(body, sizes)


_TOKEN = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=40)
_SECRET = st.text(alphabet=string.ascii_letters + string.digits + "-_/.é", min_size=16, max_size=40).filter(
    lambda s: s == s.strip())
_ECHO = {"same": lambda s: s, "upper": str.upper, "lower": str.lower, "json": lambda s: s.replace("/", "\\/")}


@settings(max_examples=300, deadline=None)
@given(secret=_SECRET, token=_TOKEN, in_query=st.booleans(), which=st.sampled_from(["secret", "token", "path", "url"]),
       echo=st.sampled_from(sorted(_ECHO)), before=st.text(alphabet=" \n\t.,:", max_size=900),
       sizes=st.lists(st.integers(1, 900), max_size=6))
def test_no_echo_of_a_secret_or_token_is_quoted(secret: str, token: str, in_query: bool, which: str, echo: str,
                                                before: str, sizes: list[int]) -> None:
    from platforms.webhook import _answer

    url = f"https://receiver.example/hooks/in?token={token}" if in_query else f"https://receiver.example/h/{token}/x"
    path = url.removeprefix("https://receiver.example")
    said = {"secret": secret, "token": token, "path": path, "url": url}[which]
    body = (before + _ECHO[echo](said) + " tail").encode()
    quoted = asyncio.run(_answer(_Answer(body, sizes), Route(secret, url))).lower()
    for kept in (secret, token):
        windows = {kept[i:i + 8].lower() for i in range(len(kept) - 7)}
        assert not any(w in quoted or w.replace("/", "\\/") in quoted for w in windows), quoted
