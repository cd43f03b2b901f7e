"""The web chat page (chat.js, chat.css) with many long answers, in a real headless chromium against the adapter
alone: the answers out of sight are not laid out, only the ones near the window, and the page still opens at the
bottom, the newest answer's end in sight. Fifty answers of 50 KB each, every one laid out to show the last, froze
the tab for five seconds (bench/web_render_bench.py).

The bound is on how many answers Chromium laid out (`checkVisibility` says whether an element's content is skipped
for being out of sight), not on time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.messages import Outbound
from platforms.web import WebChatAdapter
from tests.web_client import Intake, open_chat, serve

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

ANSWERS = 30
NEAR = 4  # the answers in and around the window; the old page laid out every one
AT_BOTTOM = "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"
# The messages whose content Chromium laid out: the others' is skipped until they come near the window.
LAID_OUT = """() => [...document.querySelectorAll('#messages > article > .text')]
  .filter((text) => text.checkVisibility({ contentVisibilityAuto: true }))
  .map((text) => text.parentElement.dataset.id)"""
FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def long_answer(n: int) -> str:
    section = (f"## Step {n}\n\nThe **first** thing is the *timeout* of `connect()`: see "
               f"[the docs](https://example.com/{n}).\n\n- one\n- two\n  - nested `code`\n\n"
               "```python\nclient = Client(timeout=10)\n```\n\n"
               "| a | b |\n|---|---|\n| 1 | 2 |\n\n")
    return section * 20 + f"The end of answer {n}."


def answer(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": long_answer(n), "time": float(n),
            "edited": False}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    intake.messages = [answer(n) for n in range(ANSWERS)]
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    yield adapter, intake, base
    await adapter.stop()
    await runner.cleanup()


async def settled_at_bottom(page: Any) -> None:
    await page.wait_for_function(f"() => ({AT_BOTTOM})(document.getElementById('messages'))")
    await page.evaluate(FRAMES)


async def test_opening_many_long_answers_lays_out_only_those_near_the_window(served, page) -> None:
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await settled_at_bottom(page)

    laid_out = await page.evaluate(LAID_OUT)
    assert f"m{ANSWERS - 1}" in laid_out and len(laid_out) <= NEAR, laid_out
    assert await page.eval_on_selector("#messages", AT_BOTTOM)  # still, once the answers near it took their heights
    assert await page.get_by_text(f"The end of answer {ANSWERS - 1}.").is_visible()  # the newest answer's end shows
    assert await page.locator("#messages > article").count() == ANSWERS  # every answer is there, laid out or not


async def test_a_reader_scrolled_up_stays_there_as_answers_take_their_heights(served, page) -> None:
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await settled_at_bottom(page)
    await page.eval_on_selector("#messages", "el => { el.scrollTop = 0; }")
    await page.wait_for_function(f"() => ({LAID_OUT})().includes('m0')")
    await page.evaluate(FRAMES)

    assert await page.eval_on_selector("#messages", "el => el.scrollTop") == 0  # not taken back to the bottom
    assert await page.get_by_role("heading", name="Step 0").first.is_visible()


async def test_a_long_answer_arriving_at_the_bottom_shows_its_end(served, page) -> None:
    adapter, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await settled_at_bottom(page)
    await adapter.send(Outbound("c1", None, long_answer(ANSWERS), idempotency_key="new"))
    await page.wait_for_selector(f"text=The end of answer {ANSWERS}.", state="attached")
    await settled_at_bottom(page)

    assert await page.get_by_text(f"The end of answer {ANSWERS}.").is_visible()
