"""The web chat page's send on its way when the page reconnects, in a real headless chromium against a
real gateway: sent again at once with the same key, which the gateway takes once.

A POST whose answer never comes is one Playwright holds (a route handler that never answers), as on
a connection that died without a word. Every wait is for something on the page or the network, each
bounded well under the page's own 20 s limit for an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.web_client import get_history, open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

PENDING = "[data-role=user].pending"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def user_texts(base: str) -> list[str]:
    async with aiohttp.ClientSession() as http:
        return [m["text"] for m in await get_history(http, base) if m["role"] == "user"]


async def test_a_send_on_its_way_when_the_page_reconnects_goes_again_at_once_and_counts_once(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    answered: list[tuple[str, str, bool]] = []  # (text, key, the gateway's "duplicate") for each POST it got
    lost = asyncio.Event()

    async def first_answer_lost(route) -> None:
        sent = route.request.post_data_json
        answer = await route.fetch()  # the gateway has it
        answered.append((sent["text"], sent["key"], (await answer.json())["duplicate"]))
        if len(answered) == 1:
            lost.set()  # and its answer never reaches the page
            return
        await route.fulfill(response=answer)

    await page.route("**/chat/api/messages", first_answer_lost)
    await type_message(page, "first")
    await asyncio.wait_for(lost.wait(), 15)
    await type_message(page, "second")  # waits behind the first
    await web.restart()  # the page reconnects: the first is still on its way
    # Not 20 s later, when the page gives up waiting for the lost answer: the second waits behind it.
    await page.wait_for_selector(PENDING, state="detached", timeout=5_000)
    assert [(text, duplicate) for text, _, duplicate in answered] == [("first", False), ("first", True),
                                                                      ("second", False)]
    first, again, second = (key for _, key, _ in answered)
    assert first == again != second
    assert await page.eval_on_selector_all("[data-role=user]", "els => els.map(e => e.dataset.text)") == [
        "first", "second"]
    await web.settled()
    assert await user_texts(web.base) == ["first", "second"]


async def test_a_send_a_reload_left_is_posted_once_when_the_page_opens(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    held, connected = asyncio.Event(), asyncio.Event()
    posted: list[str] = []

    async def network(route) -> None:
        # Which POST this is, decided here, not by a flag the test sets once the request was seen: the handler
        # may run after that, and took the page's first POST for the reloaded page's.
        if not held.is_set():
            held.set()
            return  # never answered: the reload finds it on its way
        posted.append(route.request.post_data_json["key"])
        await connected.wait()  # answered only once the page's stream has its history
        await route.continue_()

    await page.route("**/chat/api/messages", network)
    await type_message(page, "before the reload")
    await asyncio.wait_for(held.wait(), 15)
    await page.reload()  # the send waits in the tab's sessionStorage; the page posts it at once
    await page.wait_for_selector("body[data-state=connected]")
    connected.set()
    await page.wait_for_selector(PENDING, state="detached", timeout=5_000)
    assert len(posted) == 1  # the page's first connection is no reconnect: the POST beside it is not doubted
    assert await user_texts(web.base) == ["before the reload"]
