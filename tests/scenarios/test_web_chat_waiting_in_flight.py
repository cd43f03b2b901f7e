"""A message whose POST hangs, on the web chat page (chat.js), in a real headless chromium against the adapter alone:
a screen reader is told it waits a short while after it went, not only once the POST failed (up to 20 s later), and
that it went once the gateway answers; a send answered at once says nothing of the kind.

What is "heard" is as `test_web_chat_waiting_read_out` records it. The page's clock is Playwright's (`page.clock`),
paused, so the page's seconds pass only when told."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.scenarios.test_web_chat_catch_up_read_out import LISTEN
from tests.scenarios.test_web_chat_screen_reader import served  # noqa: F401
from tests.scenarios.test_web_chat_waiting_read_out import HEARD, WAITS, WENT
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


async def test_a_send_still_unanswered_after_a_moment_says_it_waits_and_that_it_went_when_answered(
        served, page) -> None:  # noqa: F811
    _, intake, base = served
    hanging = asyncio.Event()  # the POST of "slow" reached the gateway's door
    answer = asyncio.Event()

    async def slow(route: Any) -> None:  # the gateway slow to take it: no answer, nor a failure, until told
        if "slow" in (route.request.post_data or ""):
            hanging.set()
            await answer.wait()
        await route.continue_()

    await page.route("**/chat/api/messages", slow)
    await page.clock.install()
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.clock.pause_at(await page.evaluate("Date.now() / 1000") + 0.5)  # its time passes when told (in s)
    await page.evaluate(LISTEN)

    await type_message(page, "quick")  # answered at once: nothing said of waiting
    await page.wait_for_selector("[data-kind=user]:not(.pending) >> text=quick")
    await page.clock.fast_forward(5_000)
    await type_message(page, "slow")
    await hanging.wait()
    await type_message(page, "behind")  # queued behind it
    await page.wait_for_selector("[data-kind=user].pending >> text=behind")
    assert WAITS not in await page.evaluate("window.heard")
    await page.clock.fast_forward(1_500)
    assert WAITS not in await page.evaluate("window.heard")  # a moment: a send usually takes less
    await page.clock.fast_forward(600)
    # Said only once the POST failed, 20 s on: meanwhile its user heard "You: slow", then nothing.
    await page.wait_for_function(HEARD, arg=WAITS, timeout=3_000)
    snapshot = await page.locator("#messages").aria_snapshot()
    assert snapshot.splitlines()[-3:] == ['  - article: "You: quick"', '  - article: "You: slow (not sent yet)"',
                                          '  - article: "You: behind (not sent yet)"']

    answer.set()
    await page.wait_for_function(HEARD, arg=WENT, timeout=5_000)
    assert intake.texts == ["quick", "slow", "behind"]
    assert await page.locator("#messages .waiting").count() == 0
    assert await page.locator("#messages .pending").count() == 0
    heard = await page.evaluate("window.heard")
    assert heard.count(WAITS) == 1 and heard.count(WENT) == 1
