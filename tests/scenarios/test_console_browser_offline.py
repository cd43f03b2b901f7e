"""The operator console in a real headless chromium while it cannot reach the gateway, and while the state database
is down: what it shows as live, and what a screen reader is told again and again.

The page's clock is Playwright's (`page.clock`), so minutes pass at once; the gateway's is real.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.browser import contrast_failures
from tests.scenarios.test_full_disk import LONG, disk_full, room_again
from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_page_that_lost_the_gateway_says_what_it_shows_is_old_and_its_times_stop(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-gone-1")
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#work .child[data-state=RUNNING] >> text=pears")
    assert await page.locator("#stale").is_hidden()
    elapsed = page.locator("#work .turn-head .since")
    await web.stop()  # a restart (or the network) takes the gateway away
    await page.wait_for_selector("#stale:not([hidden])")
    assert "Not connected: what shows is how things stood at" in await page.locator("#stale").text_content()
    before = await elapsed.text_content()
    await page.clock.fast_forward("05:00")
    # It showed "turn running 5m 02s" on: a turn the restart had ended, shown as running on.
    assert await elapsed.text_content() == before
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        assert await contrast_failures(page) == [], scheme
    await web.start()
    await page.wait_for_selector("body[data-state=connected]")
    await page.wait_for_selector("#stale", state="hidden")


async def test_the_database_down_alert_is_not_said_again_at_every_tick_and_state(chat, page) -> None:
    web = await chat()
    db = web.gateway.store.db
    await disk_full(db)
    async with aiohttp.ClientSession() as http:
        assert (await post_message(http, web.base, "c1", "hello " + LONG, key="key-full-1"))[0] == 500
    try:
        await page.clock.install()
        await page.goto(f"{web.base}/console")
        alert = page.locator("header [role=alert]")
        await alert.filter(has_text="state database down").wait_for()
        # Each change in an alert is read out at once: the duration ticking in it, every second, and every
        # state drawing it anew (ten a second on a busy gateway).
        await page.evaluate("""() => { window.said = 0;
          const watch = new MutationObserver((changes) => { window.said += changes.length; });
          for (const node of document.querySelectorAll('header [role=alert]'))
            watch.observe(node, { childList: true, characterData: true, subtree: true }); }""")
        logging.getLogger("gateway.test").warning("a new state to draw")
        await page.locator("#errors li", has_text="a new state to draw").wait_for()
        await page.clock.fast_forward("02:00")
        assert " for 2m " in await page.locator("header .storage").text_content()  # ticking, beside it
        assert await page.evaluate("() => window.said") == 0
    finally:
        room_again(db)
