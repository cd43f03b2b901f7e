"""The web chat page (chat.js) on a phone that locks or changes networks, in a real headless chromium against the
adapter alone: its reconnect asks for what it holds as ids alone (``brief=1``), and still shows every message once,
in order, with what changed meanwhile (a progress card edited or deleted, a message sent while it was away). One the
gateway placed above the newest it holds, which it cannot show from an id, it asks for again, whole. Its script and
its event stream come gzipped. Reading older messages, a screen reader hears how many came. Every wait is for
something on the page, never for time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat, post_message, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

IDS = "els => els.map(e => e.dataset.id)"
TEXTS = "els => els.map(e => e.dataset.text)"


def said(n: int | str, kind: str = "reply", text: str | None = None, edited: bool = False) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": kind, "text": text or f"m{n}", "time": 1.0, "edited": edited}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files", history_limit=6) as (adapter, base):
        yield adapter, intake, base


async def away(adapter: WebChatAdapter, page: Any, meanwhile) -> list[str]:
    """Drop the page's stream, run ``meanwhile()`` while its reconnect is held back, let it through; the URLs of
    the streams it asked for since."""
    reconnect = asyncio.Event()
    urls: list[str] = []

    async def held_until_released(route) -> None:
        urls.append(route.request.url)
        await reconnect.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held_until_released)
    await adapter.close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    await meanwhile()
    reconnect.set()
    await page.wait_for_selector("body[data-state=connected]")
    return urls


async def test_a_brief_reconnect_shows_what_changed_and_came_meanwhile_once_each(served, page) -> None:
    adapter, intake, base = served
    intake.messages = [said(1), said(2, "notice", "⏳ Working"), said(3), said(4, "notice", "⏳ Working"), said(5)]
    async with page.expect_response("**/chat/static/chat.js") as script:
        await open_chat(page, f"{base}/chat?chat=c1")
    assert (await (await script.value).all_headers())["content-encoding"] == "gzip"
    assert await page.eval_on_selector_all("#messages > article", IDS) == ["m1", "m2", "m3", "m4", "m5"]

    async def meanwhile() -> None:
        intake.messages.remove(said(2, "notice", "⏳ Working"))  # its turn ended: the card is deleted
        intake.messages[2] = said(4, "notice", "✓ Done in 42 s", edited=True)
        async with aiohttp.ClientSession() as http:  # from another tab: the page's stream is down
            assert (await post_message(http, base, "c1", "sent meanwhile", key="meanwhile-1"))[0] == 202
        intake.messages.append(said(6))

    urls = await away(adapter, page, meanwhile)
    assert urls == [f"{base}/chat/api/events?chat=c1&after=m5&brief=1"]
    await page.wait_for_selector("[data-id=m6]")
    assert await page.eval_on_selector_all("#messages > article", IDS) == [
        "m1", "m3", "m4", "m5", "user:meanwhile-1", "m6"]
    assert await page.eval_on_selector_all("#messages > article", TEXTS) == [
        "m1", "m3", "✓ Done in 42 s", "m5", "sent meanwhile", "m6"]
    await adapter.send(Outbound(chat_id="c1", thread_id=None, text="live again", idempotency_key="m7"))
    await page.wait_for_selector("[data-id=m7]")  # the gzipped stream hands each event over as it comes


async def test_a_message_placed_above_the_newest_meanwhile_is_asked_for_again_whole(served, page) -> None:
    adapter, intake, base = served
    intake.messages = [said(n) for n in range(1, 6)]
    await open_chat(page, f"{base}/chat?chat=c1")

    async def meanwhile() -> None:
        intake.messages.insert(4, said("4b"))  # recorded before m5, published after the page lost its stream

    urls = await away(adapter, page, meanwhile)
    assert urls == [f"{base}/chat/api/events?chat=c1&after=m5&brief=1", f"{base}/chat/api/events?chat=c1&after=m5"]
    assert await page.eval_on_selector_all("#messages > article", IDS) == ["m1", "m2", "m3", "m4", "m4b", "m5"]


async def test_older_messages_loaded_are_counted_for_a_screen_reader(served, page) -> None:
    _, intake, base = served
    intake.messages = replies(f"answer {n}" for n in range(10))
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.click("#show-older")
    await page.wait_for_selector("[data-id=m0]")
    assert await page.text_content("#said") == "4 older messages loaded."
