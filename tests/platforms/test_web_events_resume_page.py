"""The web chat page (chat.js) reconnecting after being away for more than ``history_limit`` messages, in a real
headless chromium against the adapter alone: it names the newest message it holds, and shows every message
since, in order; before, it kept what it showed above the last ``history_limit`` with the replies in between
missing without a sign. When the gateway no longer has that message, the page shows what a reload would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, open_chat, serve

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SHOWN = "els => els.map(e => e.dataset.text)"


def reply(n: int, kind: str = "reply") -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": kind, "text": f"m{n}", "time": float(n), "edited": False}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    intake.messages = [reply(n) for n in range(1, 6)]
    adapter = WebChatAdapter(history_reader=intake.history, history_limit=3, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    yield adapter, intake, base
    await adapter.stop()
    await runner.cleanup()


async def away(adapter: WebChatAdapter, page: Any, meanwhile) -> list[str]:
    """Drop the page's stream, run ``meanwhile()`` while its reconnect is held back, let it through; the
    reconnect's URL."""
    reconnect = asyncio.Event()
    urls: list[str] = []

    async def held_until_released(route) -> None:
        urls.append(route.request.url)
        await reconnect.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held_until_released)
    await adapter.close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    meanwhile()
    reconnect.set()
    await page.wait_for_selector("body[data-state=connected]")
    return urls


async def test_a_page_away_for_longer_than_the_history_shows_every_message_since(served, page) -> None:
    adapter, intake, base = served
    intake.messages.append(reply(6, "notice"))  # a progress card: deleted when its turn ends, no place to resume
    await open_chat(page, f"{base}/chat?chat=c1")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m4", "m5", "m6"]

    def seven_more() -> None:
        intake.messages.remove(reply(6, "notice"))
        intake.messages.extend(reply(n) for n in range(7, 14))

    urls = await away(adapter, page, seven_more)
    assert urls[0].endswith("&after=m5&brief=1")
    await page.wait_for_selector("[data-id=m13]")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == [f"m{n}" for n in (4, 5, *range(7, 14))]


async def test_a_page_whose_newest_message_the_gateway_no_longer_has_shows_what_a_reload_would(served, page) -> None:
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m3", "m4", "m5"]

    def expired_and_more() -> None:
        intake.messages[:] = [reply(n) for n in range(20, 26)]

    await away(adapter, page, expired_and_more)
    await page.wait_for_selector("[data-id=m25]")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m23", "m24", "m25"]
