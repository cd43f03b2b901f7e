"""An operator console action whose request is still on its way when the page's event stream drops and connects
again, in a real headless chromium: the action waits for its own answer, which is what the page then says, and is
given up (its outcome unknown) only when that request itself fails.

The stream drops as one that went quiet does (a proxy that stalls it): the page's clock is Playwright's
(`page.clock`), paused, and moved past the stream's allowed silence (12.5 s), short of the action's 20 s.
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

RETRY = "**/console/api/dead-letters/*/retry"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def retry_across_a_reconnect(web: Any, page: Any, answer: Any) -> Any:
    """Press Retry on the dead letter, its request held until the page's stream has dropped and connected again,
    then answered by ``answer(route)``; the button."""
    dead_letter(web, "the quarterly numbers")
    held = asyncio.Event()
    reconnected = asyncio.Event()

    async def hold(route: Any) -> None:
        held.set()
        await reconnected.wait()
        await answer(route)

    await page.route(RETRY, hold)
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
    await retry.wait_for()
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # its time passes when told (in s)
    await page.evaluate("""() => { window.states = [];
      new MutationObserver(() => states.push(document.body.dataset.state))
        .observe(document.body, {attributes: true, attributeFilter: ["data-state"]}); }""")
    await retry.click()
    await held.wait()
    await page.clock.fast_forward(13_000)  # the stream said nothing for longer than it may: dropped
    await page.wait_for_function("() => states.includes('reconnecting')")
    await page.clock.fast_forward(1_000)  # the next connection
    await page.wait_for_function("() => states.at(-1) === 'connected'")
    await page.wait_for_selector("#stale", state="hidden")
    # Given up here, it said "may or may not have been done" of an action whose answer was on its way.
    await expect(page.locator("#notice-bar")).to_be_hidden()
    await expect(retry).to_be_disabled()
    reconnected.set()
    return retry


async def test_an_action_answered_after_the_page_connects_again_is_what_the_page_says(chat, page) -> None:
    web = await chat()
    retry = await retry_across_a_reconnect(web, page, lambda route: route.continue_())
    await retry.wait_for(state="detached")  # handed back: the gateway took it up, and the next state shows it
    assert web.gateway.store.dead_letters.get(1) is None
    await expect(page.locator("#notice-bar")).to_be_hidden()


async def test_an_action_whose_request_fails_after_the_page_connects_again_may_have_been_done(chat, page) -> None:
    web = await chat()
    retry = await retry_across_a_reconnect(web, page, lambda route: route.abort("connectionreset"))
    await expect(page.locator("#notice")).to_have_text(
        "Retry: no answer from the gateway, so it may or may not have been done; check what the page shows before "
        "pressing it again.")
    await expect(retry).to_be_enabled()
