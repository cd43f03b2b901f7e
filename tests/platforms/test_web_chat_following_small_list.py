"""Whether the web chat page (platforms/web_static/chat.js, `following`) takes a reader to the bottom as a message
arrives, in a real headless chromium against the adapter alone. A reader near the bottom follows; "near" was within
80 px whatever the list's height. On a small phone with the keyboard up and a long message being typed, the box has
40% of what shows and the message list is about 80 px tall: a reader who scrolled up half of it to read an answer
again was taken back to the bottom by each message arriving."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platforms.messages import Outbound
from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

FROM_BOTTOM = "l => l.scrollHeight - l.scrollTop - l.clientHeight"
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, str]]:
    intake = Intake()
    intake.messages += [{"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"answer {n}\n" * 5,
                         "time": float(n), "edited": False} for n in range(20)]
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, base


async def opened(page, base: str) -> None:
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function("document.querySelectorAll('[data-kind=reply]').length === 20")


async def scrolled_up_as_one_arrives(adapter: WebChatAdapter, page, up: int, key: str) -> float:
    """How far from the bottom of the list a reader ``up`` px from it is once a new answer has arrived."""
    await page.eval_on_selector("#messages", "(l, up) => { l.scrollTop = l.scrollHeight - l.clientHeight - up; }", up)
    await page.evaluate(TWO_FRAMES)  # the reader's scroll told
    assert abs(await page.eval_on_selector("#messages", FROM_BOTTOM) - up) <= 1  # to a device pixel
    await adapter.send(Outbound("c1", None, f"a new answer, {key}", idempotency_key=key))
    await page.wait_for_selector(f"[data-kind=reply] >> text=a new answer, {key}")
    await page.evaluate(TWO_FRAMES)
    return await page.eval_on_selector("#messages", FROM_BOTTOM)


# What shows of an iPhone SE (320x568) and an iPhone 8 (375x667) with the keyboard, its suggestions and Safari's bar up.
@pytest.mark.parametrize("width, height", [(320, 248), (375, 300)])
async def test_on_a_small_list_a_reader_scrolled_up_half_of_it_stays_where_they_are(
        served, browser, width, height) -> None:
    adapter, base = served
    context = await browser.new_context(viewport={"width": width, "height": height}, is_mobile=True, has_touch=True)
    context.set_default_timeout(15_000)
    try:
        page = await context.new_page()
        await opened(page, base)
        await page.fill("#input", "\n".join(f"- item {n}" for n in range(20)))  # the box at its 40%
        shown = await page.eval_on_selector("#messages", "l => l.clientHeight")
        assert 40 < shown < 100
        away = await scrolled_up_as_one_arrives(adapter, page, shown // 2, f"small-{width}")
        assert away > shown // 2 + 10  # still reading what they were; the new answer below
    finally:
        await context.close()


async def test_on_a_desktop_a_reader_within_80_px_of_the_bottom_follows(served, page) -> None:
    adapter, base = served
    await page.set_viewport_size({"width": 1024, "height": 700})
    await opened(page, base)
    assert await scrolled_up_as_one_arrives(adapter, page, 70, "desktop") < 2
