"""The operator console's notice and its buttons, in a real headless chromium, when an action's outcome repeats: the
same notice twice is read out (and seen) twice. (An action still unanswered when the page connects again waits for its
own answer: test_console_browser_action_across_reconnect.)

What a screen reader is told of the notice follows what the page shows at each frame (the accessibility tree is
taken from a rendered page): words that do not change between two frames change nothing it could read out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.scenarios.test_console_browser_disconnected import dead_letter
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# The notice as each frame shows it ("" while hidden or empty), each time it differs from the frame before.
FRAMES = """() => {
  window.shown = [];
  const look = () => {
    const text = document.getElementById("notice-bar").hidden ? "" : document.getElementById("notice").textContent;
    if (text !== (shown.at(-1) ?? "")) shown.push(text);
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""
NOT_SENT = "Retry was not sent: the page is not connected to the gateway; it reconnects by itself"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_the_same_notice_twice_is_shown_anew_so_a_screen_reader_reads_it_again(chat, page) -> None:
    web = await chat()
    dead_letter(web, "the quarterly numbers")
    await page.goto(f"{web.base}/console")
    retry = page.locator("#dead tr", has_text="quarterly").get_by_role("button", name="Retry")
    await retry.wait_for()
    await web.stop()
    await page.wait_for_selector("#stale:not([hidden])")
    await page.evaluate(FRAMES)
    await retry.focus()
    await page.keyboard.press("Enter")
    await page.wait_for_function("(text) => shown.at(-1) === text", arg=NOT_SENT)
    await page.keyboard.press("Enter")  # pressed again: the same answer
    # The alert's words did not change: nothing was read out, nothing moved, the press seemed lost.
    await page.wait_for_function("(text) => shown.filter((s) => s === text).length === 2", arg=NOT_SENT,
                                 timeout=3_000)
    assert await page.evaluate("shown") == [NOT_SENT, "", NOT_SENT]
