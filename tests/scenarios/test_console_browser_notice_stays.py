"""The notice at the top of the operator console, in a real headless chromium: one saying an action may not have
been done stays until the operator closes it or sends the next action (it was gone after 8 s, unread by an operator
who looked away, who pressed Retry again).

The page's clock is Playwright's (`page.clock`), so an action's and a notice's seconds pass at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.scenarios.test_console_browser_disconnected import dead_letter
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

UNKNOWN = ("Retry: no answer from the gateway within 20 s, so it may or may not have been done; check what the page "
           "shows before pressing it again.")


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def open_console(web: Any, page: Any) -> Any:
    """The console with its clock paused (its time passes when told), and the dead letter's Retry button."""
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
    await retry.wait_for()
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)
    return retry


async def test_a_notice_that_an_action_may_not_have_been_done_stays_until_closed(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    sent = asyncio.Event()

    async def swallow(route) -> None:  # sent, and never answered
        sent.set()

    await page.route("**/console/api/dead-letters/*/retry", swallow)
    retry = await open_console(web, page)
    await retry.focus()
    await page.keyboard.press("Enter")
    await sent.wait()
    await page.clock.fast_forward(21_000)
    notice = page.locator("#notice")
    await expect(notice).to_have_text(UNKNOWN)
    await page.clock.fast_forward(60_000)  # the operator looked away for a minute (the stream reconnects meanwhile)
    await page.wait_for_selector("body[data-state=connected]")
    await page.wait_for_selector("#stale", state="hidden")
    assert await notice.is_visible()
    assert await notice.text_content() == UNKNOWN
    close = page.get_by_role("button", name="Close the notice")
    await close.focus()  # as by Tab
    await page.keyboard.press("Enter")
    await expect(notice).to_be_hidden()
    await expect(retry).to_be_focused()  # the keyboard is back on what the notice was about


async def test_a_notice_goes_when_the_next_action_is_sent(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    await page.route("**/console/api/dead-letters/*/retry",
                     lambda route: route.fulfill(status=404, json={"error": "no such dead letter 1"}))
    retry = await open_console(web, page)
    await retry.click()
    notice = page.locator("#notice")
    await expect(notice).to_have_text("Retry did nothing: no such dead letter 1")
    await page.unroute("**/console/api/dead-letters/*/retry")
    await retry.click()  # the gateway does it, and says nothing: the notice about the first is gone
    await retry.wait_for(state="detached")
    assert await notice.is_hidden()
    assert web.gateway.store.dead_letters.get(1) is None
