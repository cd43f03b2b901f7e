"""The web chat page (live.js, chat.js) in a real headless chromium against the adapter alone: how it
reads the answers a gateway away, or a proxy in front of it, gives. The page's outages at length are
in tests/scenarios/test_web_chat_outages.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

STATES = """() => {
  window.states = [];
  new MutationObserver(() => window.states.push(document.body.dataset.state))
    .observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
}"""
"""Records each connection state the page shows from now on, in ``window.states``."""



@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


@pytest.mark.parametrize("status", [502, 503, 504])
async def test_a_stream_answered_5xx_is_a_drop_reconnected_on_the_backoff_not_a_refusal(served, page, status) -> None:
    # A restart behind a proxy: the proxy answers 502 until the gateway is back (504 when it hangs, 503
    # from the gateway itself while it stops). The page is reconnecting, and back as soon as the next try
    # finds the gateway: not "not connected: HTTP 502" for 10 s after a restart of one.
    adapter, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate(STATES)
    answered = asyncio.Event()

    async def away_once(route) -> None:
        if answered.is_set():
            await route.continue_()
            return
        await route.fulfill(status=status, content_type="text/html", body="<html>Bad Gateway</html>")
        answered.set()

    await page.route("**/chat/api/events?*", away_once)
    await adapter.close_streams()  # the gateway goes away
    await asyncio.wait_for(answered.wait(), 5)
    await page.wait_for_function("() => window.states.at(-1) === 'connected'", timeout=5_000)
    assert "refused" not in await page.evaluate("window.states")
    assert await page.text_content("#status") == "connected"


async def test_a_stream_refused_for_a_reason_still_says_why(served, page) -> None:
    _, _, base = served

    async def not_allowed(route) -> None:
        await route.fulfill(status=403, json={"error": "user 'mallory' is not allowed to use this chat"})

    await page.route("**/chat/api/events?*", not_allowed)
    await page.goto(f"{base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=refused]")
    assert await page.text_content("#status") == "not connected: user 'mallory' is not allowed to use this chat"


@pytest.mark.parametrize("status", [408, 429])
async def test_a_post_answered_not_now_is_sent_again_and_keeps_its_place(served, page, status) -> None:
    # 408 (a proxy's or the server's body timeout) and 429 (a proxy's rate limit) are no refusal of the
    # message: refused, it would wait in red while the one typed after it reached the agent first.
    _, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    answered = asyncio.Event()

    async def not_now_once(route) -> None:
        if answered.is_set():
            await route.continue_()
            return
        await route.fulfill(status=status, json={"error": "not now"})
        answered.set()

    await page.route("**/chat/api/messages", not_now_once)
    await type_message(page, "first")
    await asyncio.wait_for(answered.wait(), 5)
    await type_message(page, "second")
    await page.wait_for_selector("[data-role=user].pending", state="detached", timeout=10_000)
    assert intake.texts == ["first", "second"]
    assert await page.query_selector(".failed") is None
