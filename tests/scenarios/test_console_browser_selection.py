"""The operator console in a real headless chromium while the operator selects text to copy: each state drew the
page anew (several a second while busy), and the selection went with the nodes it was in.

The page's clock is Playwright's (`page.clock`), so the longest hold passes at once; the gateway's is real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.browser import contrast_failures
from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# Found and selected in one task of the page: a locator's element, found in one call and selected in the next, was
# now and then one a state had drawn over in between, and a range outside the document selects nothing.
SELECT = """(selector) => {
  const node = document.querySelector(selector);
  const range = document.createRange();
  range.selectNodeContents(node);
  document.getSelection().removeAllRanges();
  document.getSelection().addRange(range);
  node.dataset.before = "yes";
}"""
# The next state: held (the page says so), or drawn over the selection.
NEXT = """(chat) => !document.querySelector('#paused')?.hidden
  || [...document.querySelectorAll('#sessions tr')].some((row) => row.textContent.includes(chat))"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_turn_id_selected_stays_selected_while_states_arrive_and_the_page_catches_up_after(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-sel-1")
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    turn_id = page.locator("#work .turn .id")
    await page.wait_for_selector("#work .child[data-state=RUNNING] >> text=pears")
    expected = await turn_id.text_content()
    assert expected
    selected = f'#work .turn[data-turn-id="{expected}"] .id'
    await page.evaluate(SELECT, selected)
    async with aiohttp.ClientSession() as http:  # something else happens meanwhile: a new state
        await post_message(http, web.base, "c2", "hello", key="key-sel-2")
        await page.wait_for_function(NEXT, arg="c2")
        assert await page.evaluate("() => document.getSelection().toString()") == expected
        assert await page.locator("[data-before]").count() == 1  # the very node selected, not one drawn anew
        assert await page.locator("#sessions tr", has_text="c2").count() == 0
        for scheme in ("light", "dark"):
            await page.emulate_media(color_scheme=scheme)
            assert await contrast_failures(page) == [], scheme
        # Cleared, the page shows the latest state at once.
        await page.evaluate("() => document.getSelection().removeAllRanges()")
        await page.locator("#sessions tr", has_text="c2").wait_for()
        assert await page.locator("#paused").is_hidden()
        # A selection forgotten on a page left open does not stop it for good: 30 s at most.
        await page.evaluate(SELECT, selected)
        await post_message(http, web.base, "c3", "hello", key="key-sel-3")
        # Held: "Updates paused", or, if the stream dropped and came back meanwhile (a loaded machine's late
        # keep-alive), the line saying the page shows how things stood before.
        await page.wait_for_selector("#paused:not([hidden]), #stale:not([hidden])")
        await page.clock.fast_forward("00:29")
        assert await page.locator("#sessions tr", has_text="c3").count() == 0
        await page.clock.fast_forward("00:02")
        await page.locator("#sessions tr", has_text="c3").wait_for()
        assert await page.locator("#paused").is_hidden()
