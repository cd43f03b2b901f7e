"""The web chat page keeps a half-typed message through a reload (a phone reloading a tab it had in the
background): in the tab's sessionStorage, per chat, until it is sent. A real headless chromium against a
`WebChatAdapter`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_half_typed_message_stays_through_a_reload_until_it_is_sent(served, page) -> None:
    intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.locator("#input").press_sequentially("half typed")
    await page.press("#input", "Shift+Enter")  # a new line, not a send
    await page.locator("#input").press_sequentially("second line")
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.input_value("#input") == "half typed\nsecond line"
    await open_chat(page, f"{base}/chat?chat=c2")  # another chat's box: its own draft, none yet
    assert await page.input_value("#input") == ""
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.press("#input", "End")
    await page.locator("#input").press_sequentially(", done")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-role=user]:not(.pending)")
    assert intake.texts == ["half typed\nsecond line, done"]
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.input_value("#input") == ""
