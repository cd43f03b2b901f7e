"""The operator console in a real headless chromium: a state held while text is selected, drawn later, shows each
platform's time since its last event as of that state, not as of the moment it is drawn.

The page's clock is Playwright's (`page.clock`), so the hold's seconds pass at once; the gateway's is real.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.scenarios.test_console_browser_disconnected import dead_letter
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_platform_age_in_a_state_drawn_after_a_hold_counts_the_hold(chat, page) -> None:
    web = await chat()
    await page.clock.install()
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("body[data-state=connected]")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # its time passes when told (in s)
    await page.locator("h1").evaluate("""(node) => {
      const range = document.createRange();
      range.selectNodeContents(node);
      document.getSelection().addRange(range);
    }""")
    dead_letter(web, "the quarterly numbers")  # one change: one state, held
    await page.wait_for_selector("#paused:not([hidden])")
    # Less than the 12.5 s of silence that counts as a drop: the connection stays.
    await page.clock.fast_forward(10_000)
    await page.evaluate("() => document.getSelection().removeAllRanges()")
    await page.locator("#dead tr", has_text="quarterly").wait_for()
    age = await page.locator("#platforms li[data-platform=web] .since").text_content()
    # It read the 10 s younger, and stayed so: an age is sent again only when the platform hears something.
    assert age is not None and (match := re.fullmatch(r"(\d+)s ago", age)), age
    assert int(match[1]) >= 10
