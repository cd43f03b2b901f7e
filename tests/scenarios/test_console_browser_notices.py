"""What the console's page says when the gateway answers an action 503, in a real headless chromium.

A 503 means the action was done in this process but the state database cannot save it yet (a stop
stands: ``the subagents are being stopped, but the stop is not saved yet``). The page said "Stop did
nothing: the subagents are being stopped…", telling the operator both things at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.console.routes import STOP_NOT_SAVED
from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_stop_the_database_could_not_save_yet_is_not_said_to_have_done_nothing(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-503-1")
    await page.goto(f"{web.base}/console")
    stop = page.locator("#work .child", has_text="pears").get_by_role("button", name="Stop")
    await page.route("**/console/api/children/*/stop",
                     lambda route: route.fulfill(status=503, json={"error": STOP_NOT_SAVED}))
    page.on("dialog", lambda dialog: dialog.accept())
    await stop.click()
    await page.wait_for_selector("#notice:not([hidden])")
    assert await page.locator("#notice").text_content() == f"Stop: {STOP_NOT_SAVED}"
    await page.unroute("**/console/api/children/*/stop")
    await stop.click()  # asked again, once the database can save it: it answers ok
    await page.wait_for_selector("#work .child[data-state=INTERRUPTED] >> text=pears")
