"""The operator console in a real headless chromium after its connection to the gateway dropped: coming back while
text is selected, a second drop, and an action whose request the network swallowed.

The page's clock is Playwright's (`page.clock`), so a hold's and an action's seconds pass at once; the gateway's is
real. A stream the test serves itself (`page.route`) gives one state, with the gateway time it chooses, and ends.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.scenarios.test_console_browser_disconnected import dead_letter
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SELECT = """(node) => {
  const range = document.createRange();
  range.selectNodeContents(node);
  document.getSelection().removeAllRanges();
  document.getSelection().addRange(range);
}"""
CLEAR = "() => document.getSelection().removeAllRanges()"
# A gateway time as the page writes it (console.js `when`).
WHEN = """(time) => new Date(time * 1000).toLocaleString(undefined, {
  year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  timeZoneName: "short" })"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_back_while_text_is_selected_it_says_connected_again_not_not_connected(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    row = page.locator("#dead tr", has_text="quarterly")
    await row.wait_for()
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # no reconnect until told
    await web.stop()
    await page.wait_for_selector("#stale:not([hidden])")
    when = re.sub(r"^Not connected: what shows is how things stood at (.*); it may have changed since\.$", r"\1",
                  await page.locator("#stale").text_content() or "")
    await row.locator("td.text").evaluate(SELECT)  # the operator copies the event's text
    await web.start()
    await page.clock.fast_forward(1_000)  # the next connection: its state is held for the selection
    await page.wait_for_selector("body[data-state=connected]")
    stale = page.locator("#stale")
    # It said "Not connected" on, beside "connected" in the status, and a button pressed said the page was not
    # connected, until the selection was cleared.
    said = (f"Connected again, but what shows is still how things stood at {when}: clear the selection to see the "
            "current state (it shows by itself within 30 s).")
    await expect(stale).to_have_text(said)
    assert await page.locator("#paused").is_hidden()  # said in that line
    retry = row.get_by_role("button", name="Retry")
    await expect(retry).to_have_accessible_description(said)
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    await retry.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#notice")).to_have_text(
        "Retry was not sent: what shows is from before the connection dropped; clear the selection to see the "
        "current state first")
    assert posts == []
    assert await page.evaluate("() => document.getSelection().toString()") == "the quarterly numbers"
    await page.evaluate(CLEAR)
    await expect(stale).to_be_hidden()
    await expect(retry).to_be_enabled()


async def test_a_second_drop_shows_the_state_from_between_as_of_its_own_time_not_the_first(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    async with aiohttp.ClientSession() as http, http.get(f"{web.base}/console/api/state") as response:
        state = await response.json()
    # Half-way through a second, each drop (within milliseconds of its state) is said in that state's second.
    first = math.floor(state["now"]) + 1.5
    second = first + 600  # the second connection ten minutes after the first
    served, second_may_open = [first, second], asyncio.Event()

    async def stream(route) -> None:  # one state, then the stream ends: a drop; after the two, none answers
        if not served:
            await route.abort()
            return
        now = served.pop(0)
        if now == second:
            await second_may_open.wait()
        body = "event: state\ndata: " + json.dumps({**state, "now": now}) + "\n\n"
        await route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=body)

    await page.route("**/console/api/events", stream)
    await page.goto(f"{web.base}/console")
    row = page.locator("#dead tr", has_text="quarterly")
    await page.wait_for_selector("#stale:not([hidden])")  # the first drop
    await expect(page.locator("#stale")).to_contain_text(await page.evaluate(WHEN, first))
    await row.locator("td.text").evaluate(SELECT)
    second_may_open.set()  # its state is held for the selection, then it drops too
    await page.wait_for_selector("#paused:not([hidden])")
    await page.wait_for_selector("body:not([data-state=connected])")
    await page.evaluate(CLEAR)  # the state the second connection brought, drawn
    # Drawn as of the first drop, the line named it, and ages stopped there: "0s ago" for a letter 10 minutes old.
    await expect(page.locator("#stale")).to_have_text(
        f"Not connected: what shows is how things stood at {await page.evaluate(WHEN, second)}; "
        "it may have changed since.")
    await expect(row.locator(".since")).to_have_text(re.compile(r"^10m 0\ds ago$"))


async def test_an_action_the_network_swallowed_gives_its_button_back_saying_its_outcome_is_unknown(
        chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    sent = asyncio.Event()

    async def swallow(route) -> None:  # sent, and never answered
        sent.set()

    await page.route("**/console/api/dead-letters/*/retry", swallow)
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
    await retry.wait_for()
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # its time passes when told (in s)
    await retry.click()
    await sent.wait()
    await expect(retry).to_be_disabled()
    await page.clock.fast_forward(19_000)
    assert await retry.evaluate("(button) => button.disabled")
    await page.clock.fast_forward(2_000)
    # Disabled for good, "working" on a request nothing would ever answer; it may have been done, so not "failed".
    await expect(page.locator("#notice")).to_have_text(
        "Retry: no answer from the gateway within 20 s, so it may or may not have been done; check what the page "
        "shows before pressing it again.")
    await page.clock.fast_forward(1_000)  # the stream, silent for the 21 s that passed at once, is opened again
    await page.wait_for_selector("body[data-state=connected]")
    await page.wait_for_selector("#stale", state="hidden")
    await expect(retry).to_be_enabled()
    await page.unroute("**/console/api/dead-letters/*/retry")
    await retry.click()
    await retry.wait_for(state="detached")
    assert web.gateway.store.dead_letters.get(1) is None
