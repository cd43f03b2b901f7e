"""The operator console's page in a real headless chromium while it is not connected to the gateway: its buttons,
and how soon a connection that died without a close is noticed.

A silent drop goes through a relay that stops passing the event stream's bytes and never closes it; the page's
clock is Playwright's (`page.clock`), so its deadline passes at once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import expect

from platforms.messages import Inbound
from tests.scenarios.test_web_chat_outages import Relay
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

FOCUSED = "() => document.activeElement.getAttribute('aria-label')"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


def dead_letter(web: Any, text: str, event_id: str = "ev-1") -> None:
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', ?, ?, NULL, 3, 'database or disk is full', ?, ?)",
        [(event_id, json.dumps(Inbound("web", "c1", None, "u1", None, text, event_id).to_json()), now, now)])


async def test_while_not_connected_the_buttons_are_disabled_saying_why_and_enabled_again_on_reconnect(
        chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    await page.goto(f"{web.base}/console")
    retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
    await retry.focus()  # as by Tab: the operator is about to press Enter
    name = await page.evaluate(FOCUSED)
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    await web.stop()  # a restart (or the network) takes the gateway away
    await page.wait_for_selector("#stale:not([hidden])")
    # They stayed enabled: a Stop asked its question about a picture that may be old, and the request failed,
    # or, on a network gone, hung unanswered.
    for button in await page.locator("button[data-action]").all():
        await expect(button).to_be_disabled()
        await expect(button).to_have_accessible_description(re.compile("^Not connected: what shows is how things"))
    assert await page.evaluate(FOCUSED) == name  # the keyboard keeps its place
    await page.keyboard.press("Enter")
    await expect(page.locator("#notice")).to_have_text(
        "Retry was not sent: the page is not connected to the gateway; it reconnects by itself")
    assert posts == []
    await web.start()
    await page.wait_for_selector("#stale", state="hidden")
    await expect(retry).to_be_enabled()
    assert await retry.get_attribute("aria-describedby") is None
    assert await page.evaluate(FOCUSED) == name
    await page.keyboard.press("Enter")  # what was chosen, at once
    await retry.wait_for(state="detached")
    assert web.gateway.store.dead_letters.get(1) is None


async def test_a_stream_that_died_without_a_close_is_noticed_within_fifteen_seconds(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    relay = Relay(web.port, stream=b"GET /console/api/events")
    url = await relay.start()
    try:
        await page.clock.install()
        await page.goto(f"{url}/console")
        retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
        await retry.wait_for()
        await page.wait_for_selector("body[data-state=connected]")
        await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # its time passes when told (in s)
        relay.go_silent()  # a laptop's Wi-Fi gone: no close, nothing more either way
        await page.clock.fast_forward(13_000)
        # It showed the picture as live, its buttons enabled, for 37 s (2.5 keep-alive intervals of 15 s).
        await page.wait_for_selector("#stale:not([hidden])", timeout=3_000)
        await expect(retry).to_be_disabled()
        await page.clock.fast_forward(1_000)  # the next connection, through the relay anew
        await page.wait_for_selector("#stale", state="hidden")
        await expect(retry).to_be_enabled()
    finally:
        await relay.close()


async def test_a_state_held_for_a_selection_and_drawn_after_a_drop_keeps_the_page_not_connected(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    text = page.locator("#dead tr", has_text="quarterly").locator("td.text")
    await text.wait_for()
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # no reconnect until told
    await text.evaluate("""(node) => {
      const range = document.createRange();
      range.selectNodeContents(node);
      document.getSelection().addRange(range);
    }""")
    dead_letter(web, "the annual report", "ev-2")
    await page.wait_for_selector("#paused:not([hidden])")  # held while the text is selected
    await web.stop()
    await page.wait_for_selector("#stale:not([hidden])")
    said = await page.locator("#stale").text_content()
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    await page.evaluate("() => document.getSelection().removeAllRanges()")
    annual = page.locator("#dead tr", has_text="annual").get_by_role("button", name="Retry")
    await annual.wait_for()  # the held state, drawn
    # It drew as live, the line gone and the buttons enabled, while the gateway was away (until a reconnect failed).
    await expect(page.locator("#stale")).to_have_text(said)  # how things stood when it dropped: nothing newer came
    assert await page.locator("#stale").is_visible()
    for button in await page.locator("button[data-action]").all():
        assert await button.get_attribute("aria-disabled") == "true"
        await expect(button).to_have_accessible_description(re.compile("^Not connected: what shows is how things"))
    await annual.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#notice")).to_have_text(
        "Retry was not sent: the page is not connected to the gateway; it reconnects by itself")
    assert posts == []
    await web.start()
    await page.clock.fast_forward(1_000)  # the next connection
    await page.wait_for_selector("#stale", state="hidden")
    await expect(annual).to_be_enabled()
