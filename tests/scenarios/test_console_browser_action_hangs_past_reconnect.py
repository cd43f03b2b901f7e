"""An operator console action whose request hangs past a reconnect of the page's event stream
(`test_console_browser_action_across_reconnect`): the reconnect no longer ends it, so its own 20 s still do,
with the notice that it may or may not have been done and its button pressable again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.async_api import expect

from tests.scenarios.test_console_browser_action_across_reconnect import chat, retry_across_a_reconnect  # noqa: F401

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


async def test_an_action_hanging_past_a_reconnect_is_given_up_at_its_own_time(chat, page) -> None:  # noqa: F811
    web = await chat()
    never = asyncio.Event()

    async def hang(route: Any) -> None:  # no answer, nor a failure: a connection that died without a word
        await never.wait()

    retry = await retry_across_a_reconnect(web, page, hang)  # 14 s of the page's clock have passed
    await page.clock.fast_forward(5_000)
    await expect(retry).to_be_disabled()  # drawn anew by the states since, still on its way
    await page.clock.fast_forward(1_100)
    await expect(page.locator("#notice")).to_have_text(
        "Retry: no answer from the gateway within 20 s, so it may or may not have been done; check what the page "
        "shows before pressing it again.")
    await expect(retry).to_be_enabled()
    never.set()
