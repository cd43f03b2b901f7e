"""The web chat page (chat.js) on a phone with a conversation longer than its history, in a real headless chromium
against the adapter alone: scrolled up to the oldest message it shows, the page brings the older ones, in order and
once each, and says so when it cannot. It used to stop at the last ``history_limit`` messages without a sign that the
conversation went on above. Every wait is for something on the page, never for time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

IDS = "els => els.map(e => e.dataset.id)"
TO_TOP = "el => { el.scrollTop = 0; }"
FROM_TOP = "el => Math.round(el.getBoundingClientRect().top - el.parentElement.getBoundingClientRect().top)"
TO_TOP_READING_M25 = "el => { el.scrollTop = 0; return (" + FROM_TOP + ")(el.querySelector('[data-id=m25]')); }"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    """An adapter whose pages open with the last 10 of 35 messages."""
    intake = Intake()
    intake.messages = replies(f"answer {n}" + "\n\nand a paragraph more" * 5 for n in range(35))  # 10: screens of it
    async with chat_alone(intake, tmp_path / "files", history_limit=10) as (adapter, base):
        yield adapter, intake, base


@pytest_asyncio.fixture(loop_scope="session")
async def phone(browser) -> AsyncIterator[Any]:
    context = await browser.new_context(**PHONE)
    context.set_default_timeout(10_000)
    yield await context.new_page()
    await context.close()


async def more_shown_than(page: Any, count: int) -> None:
    await page.wait_for_function("n => document.querySelectorAll('#messages > article').length > n", arg=count)


async def test_scrolling_up_brings_the_older_messages_in_order_and_a_reconnect_keeps_them(served, phone) -> None:
    adapter, intake, base = served
    await open_chat(phone, f"{base}/chat?chat=c1")
    assert await phone.eval_on_selector_all("#messages > article", IDS) == [f"m{n}" for n in range(25, 35)]
    read_at = await phone.eval_on_selector("#messages", TO_TOP_READING_M25)  # at once: before its scroll event
    await more_shown_than(phone, 10)
    await phone.evaluate("() => new Promise(requestAnimationFrame)")  # laid out and painted, rendered as they came near
    assert await phone.eval_on_selector("[data-id=m25]", FROM_TOP) == read_at  # what the reader was at stays put
    while not await phone.query_selector("[data-id=m0]"):  # each time the reader scrolls up to the top: ten more
        count = len(await phone.eval_on_selector_all("#messages > article", IDS))
        await phone.eval_on_selector("#messages", TO_TOP)
        await more_shown_than(phone, count)
    everything = [m["id"] for m in intake.messages]
    assert await phone.eval_on_selector_all("#messages > article", IDS) == everything
    assert await phone.is_hidden("#older")
    await adapter.close_streams()  # a reconnect's history holds the last 10: the older ones stay, once each
    await phone.wait_for_selector("body[data-state=reconnecting]")
    await phone.wait_for_selector("body[data-state=connected]")
    assert await phone.eval_on_selector_all("#messages > article", IDS) == everything


async def test_older_messages_that_cannot_be_fetched_are_said_and_tried_again_on_request(served, phone) -> None:
    _, intake, base = served
    await open_chat(phone, f"{base}/chat?chat=c1")
    await phone.route("**/chat/api/history?*", lambda route: route.abort("internetdisconnected"))
    await phone.eval_on_selector("#messages", TO_TOP)
    failed = await phone.wait_for_selector("#older.failed")
    assert await failed.text_content() == "Older messages could not be loaded: the gateway cannot be reached Try again"
    await phone.unroute("**/chat/api/history?*")
    await phone.tap("#older button")
    await more_shown_than(phone, 10)
    assert await phone.eval_on_selector_all("#messages > article", IDS) == [f"m{n}" for n in range(15, 35)]
    assert await phone.is_hidden("#older")
