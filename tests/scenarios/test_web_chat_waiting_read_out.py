"""What a screen reader is told of a message the web chat page holds back (chat.js), in a real headless chromium
against the adapter alone: that it is not sent yet, in its bubble and once in the page's spoken status, and once
that it went; and that what the page says is gone again a while after.

What is "heard" is each addition to the page whose nearest live region reads it out (ARIA's rule, as
`test_web_chat_catch_up_read_out` records it). The page's clock is Playwright's (`page.clock`), running unless told."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scenarios.test_web_chat_catch_up_read_out import LISTEN
from tests.scenarios.test_web_chat_screen_reader import reconnect_after, said, served  # noqa: F401
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

WAITS = "Not sent yet: your message waits, and goes by itself once the gateway takes it."
WENT = "Sent: the messages that waited are with the gateway now."
HEARD = "(text) => window.heard.includes(text)"


async def test_a_message_held_back_says_so_in_words_and_once_more_when_it_went(served, page) -> None:  # noqa: F811
    _, intake, base = served
    away = True

    async def restarting(route: Any) -> None:  # the gateway not taking it now, until it is back
        if away:
            await route.fulfill(status=503)
        else:
            await route.continue_()

    await page.route("**/chat/api/messages", restarting)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate(LISTEN)
    await type_message(page, "hello")
    # Only the dashed outline said it: its user heard "You: hello", then nothing, and took it for lost.
    await page.wait_for_function(HEARD, arg=WAITS, timeout=5_000)
    await type_message(page, "and then")  # queued behind it: said not sent yet as it shows
    await page.wait_for_function(HEARD, arg="You: and then (not sent yet)", timeout=5_000)
    assert await page.locator("#messages").aria_snapshot() == "\n".join([
        '- log "Messages":',
        '  - article: "You: question 0"',
        '  - article: "Agent: answer 0"',
        '  - article: "You: question 1"',
        '  - article: "Agent: answer 1"',
        '  - article: "You: hello (not sent yet)"',
        '  - article: "You: and then (not sent yet)"',
    ])
    assert (await page.evaluate("window.heard")).count(WAITS) == 1  # once, not at each retry nor each message

    away = False
    await page.wait_for_function(HEARD, arg=WENT, timeout=5_000)
    assert intake.texts == ["hello", "and then"]
    assert await page.locator("#messages .waiting").count() == 0
    assert "(not sent yet)" not in await page.locator("#messages").aria_snapshot()


async def test_what_the_page_said_is_gone_a_while_after_not_met_again_stale(served, page) -> None:  # noqa: F811
    adapter, intake, base = served
    await page.clock.install()
    await open_chat(page, f"{base}/chat?chat=c1")
    await reconnect_after(page, adapter, intake, said(2) + said(3))  # a long catch-up: said as its number
    caught_up = page.get_by_text("4 new messages came while the chat was disconnected.")
    assert await caught_up.count() == 1
    await page.clock.fast_forward(6_000)
    assert await caught_up.count() == 1  # a screen reader has time to read it
    # It stayed until the next long reconnect: whoever read the page through met it there, long after.
    await page.clock.fast_forward(1_500)
    await caught_up.wait_for(state="detached", timeout=2_000)
    assert await page.locator("#said").text_content() == ""
