"""The web chat page (chat.js) with a long conversation, in a real headless chromium against the adapter alone: a
history of thousands of messages (``history_limit`` raised, or a reconnect reaching back up to 2,000 messages) is
shown with the page laid out a few times, not once per message. Each message used to ask whether the reader was
at the bottom, which lays the page out again after the last one added: opening 5,000 messages froze the tab for
close to a minute, and a reconnect bringing 2,000 for seconds.

The bound is on Chromium's own count of layouts (the DevTools protocol's ``LayoutCount``), not on time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, open_chat, serve

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

LONG = 1000
FEW_LAYOUTS = 50  # the page's own few (its first paint, the status line); the old page made one per message
AT_BOTTOM = "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"


def message(n: int) -> dict[str, Any]:
    if n % 2:
        return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"**answer** {n}\n\n- `a`\n- b",
                "time": float(n), "edited": False}
    return {"id": f"user:q{n}", "role": "user", "kind": "user", "text": f"question {n}", "time": float(n),
            "edited": False}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[Any]:
    """``served(history_limit)`` -> (adapter, intake, base url); stopped after the test."""
    running: list[tuple[WebChatAdapter, Any]] = []

    async def start(history_limit: int) -> tuple[WebChatAdapter, Intake, str]:
        intake = Intake()
        adapter = WebChatAdapter(history_reader=intake.history, history_limit=history_limit,
                                 files_dir=tmp_path / "files")
        await adapter.start(intake.take)
        runner, base = await serve(adapter)
        running.append((adapter, runner))
        return adapter, intake, base

    yield start
    for adapter, runner in running:
        await adapter.stop()
        await runner.cleanup()


async def layout_counter(page: Any) -> Callable[[], Awaitable[float]]:
    """Reads how many times Chromium has laid ``page`` out since this call (it counts from here)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Performance.enable")

    async def layouts() -> float:
        metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
        return next(m["value"] for m in metrics if m["name"] == "LayoutCount")

    return layouts


async def shown(page: Any) -> list[str]:
    return await page.eval_on_selector_all("#messages > article", "els => els.map(e => e.dataset.id)")


async def test_opening_a_long_history_lays_the_page_out_a_few_times_not_once_per_message(served, page) -> None:
    _, intake, base = await served(history_limit=LONG)
    intake.messages = [message(n) for n in range(LONG)]
    layouts = await layout_counter(page)
    await open_chat(page, f"{base}/chat?chat=c1")

    assert await layouts() < FEW_LAYOUTS
    assert await shown(page) == [m["id"] for m in intake.messages]  # all of them, in order
    assert await page.eval_on_selector("#messages", AT_BOTTOM)  # the newest shows, as before


async def test_a_reconnect_bringing_a_long_history_lays_the_page_out_a_few_times(served, page) -> None:
    adapter, intake, base = await served(history_limit=5)
    intake.messages = [message(n) for n in range(5)]
    await open_chat(page, f"{base}/chat?chat=c1")
    layouts = await layout_counter(page)
    reconnect = asyncio.Event()

    async def held_until_released(route) -> None:
        await reconnect.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held_until_released)
    await adapter.close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    intake.messages += [message(n) for n in range(5, 5 + LONG)]  # said while the page was away
    reconnect.set()
    await page.wait_for_selector("body[data-state=connected]")

    assert await layouts() < FEW_LAYOUTS
    assert len(await shown(page)) == 5 + LONG
    assert await page.eval_on_selector("#messages", AT_BOTTOM)
