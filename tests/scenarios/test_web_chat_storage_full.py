"""The web chat page with no room left in the tab's storage (another chat's refused messages, a pasted log): what
is typed is sent all the same, in order, a refused message still shows with its text, and the page says once that
a reload would lose what is not sent yet. A real headless chromium against a `WebChatAdapter`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platforms.web import MAX_TEXT
from tests.browser import contrast_failures
from tests.web_client import Intake, chat_alone, open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

FILL = """(area) => {
    // To the brim: the largest filler that fits, then one character less each time, halved, until nothing does.
    const storage = window[area];
    let filler = "";
    for (let size = 1 << 23; size >= 1; size >>= 1) {
        try {
            storage.setItem("filler", filler + "f".repeat(size));
            filler += "f".repeat(size);
        } catch {
            // no room for that much more
        }
    }
}"""
NOTE = "#not-kept"


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_messages_the_storage_has_no_room_for_are_sent_in_order_and_the_page_says_so_once(served, page) -> None:
    intake, base = served
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate(FILL, "sessionStorage")
    big = "x" * MAX_TEXT
    await type_message(page, big)
    await type_message(page, "second")
    await page.locator("[data-role=user]:not(.pending)").nth(1).wait_for()
    assert intake.texts == [big, "second"]
    assert await page.input_value("#input") == ""
    assert await page.locator(NOTE).count() == 1
    assert "kept only while this tab stays open" in await page.text_content(NOTE)
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        assert await contrast_failures(page) == [], scheme
    assert errors == []


async def test_a_refused_message_the_storage_has_no_room_for_still_shows_and_the_next_one_goes(served, page) -> None:
    intake, base = served
    held, release = asyncio.Event(), asyncio.Event()

    async def hold(route) -> None:
        held.set()
        await release.wait()
        await route.continue_()

    await open_chat(page, f"{base}/chat?chat=c1")
    await page.route("**/chat/api/messages", hold)
    too_long = "y" * (MAX_TEXT + 1)
    await type_message(page, too_long)
    await asyncio.wait_for(held.wait(), 10)
    await page.evaluate(FILL, "sessionStorage")  # filled while the message is on its way, kept in storage then
    release.set()
    refused = page.locator("[data-role=user].failed")
    await refused.wait_for(timeout=5_000)
    assert await refused.locator(".reason").text_content() == f'Not sent: "text" must be at most {MAX_TEXT} characters'
    assert await page.input_value("#input") == too_long  # back in the box, to shorten
    await page.fill("#input", "")
    await refused.locator("button.edit").click()
    assert await page.input_value("#input") == too_long  # Edit has its text, kept in the page's memory
    await page.unroute("**/chat/api/messages")
    await type_message(page, "next")
    await page.wait_for_selector("[data-role=user]:not(.pending):not(.failed)")
    assert intake.texts == ["next"]
    assert await page.locator(NOTE).count() == 1


async def test_the_page_starts_when_local_storage_has_no_room_for_its_chat(served, page) -> None:
    intake, base = served
    await page.goto(f"{base}/chat?chat=c1")
    await page.evaluate(FILL, "localStorage")  # another app of this origin filled it
    await open_chat(page, f"{base}/chat")  # no chat named: the page makes one, with nowhere to keep it
    await type_message(page, "hello")
    await page.wait_for_selector("[data-role=user]:not(.pending)")
    assert intake.texts == ["hello"]
