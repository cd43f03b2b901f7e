"""The web chat page on a phone that loses its network, in a real headless chromium: what the page says
while offline, and what it does the moment the network is back. The page's timers run on Playwright's
clock, held still: nothing the page does after the network is back may wait for one of them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SHOWN = "els => els.map(e => e.dataset.text)"


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


def reply(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"m{n}", "time": float(n), "edited": False}


async def test_offline_the_page_says_so_and_back_online_it_reconnects_and_sends_at_once(served, page) -> None:
    adapter, intake, base = served
    await page.clock.install()
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.clock.pause_at(await page.evaluate("Date.now()") + 1_000)  # no backoff ends by itself from now on
    await page.context.set_offline(True)
    # Chromium may let the page try once more before its own network is emulated away, and connect: the page
    # is asked to say "offline" first, then the stream dies with the network, as on a phone.
    await page.wait_for_selector("body[data-state=offline]", timeout=10_000)
    await adapter.close_streams()
    assert "offline" in await page.text_content("#status")
    async with page.expect_event("requestfailed"):
        await type_message(page, "typed offline")
    intake.messages += [reply(1), reply(2)]  # said while the page was away
    await page.clock.fast_forward(30_000)  # thirty seconds offline: every retry fails
    assert await page.eval_on_selector_all("[data-role=user].pending", SHOWN) == ["typed offline"]
    await page.context.set_offline(False)
    await page.wait_for_selector("[data-role=user].pending", state="detached", timeout=10_000)
    await page.wait_for_selector("body[data-state=connected]", timeout=10_000)
    assert intake.texts == ["typed offline"]
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m1", "m2", "typed offline"]
