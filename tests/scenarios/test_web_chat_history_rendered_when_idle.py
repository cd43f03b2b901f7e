"""The web chat page (chat.js) opening a history of long answers, in a real headless chromium against the adapter
alone: the answers it shows as typed until scrolled near (`test_web_chat_history_rendered_near`) are rendered while
the page is idle after it opened, so a screen reader moving by heading or link (NVDA's H and K keys, its list of
links) finds them all without the page being scrolled, and what the reader looks at does not move. A reconnect's
history starts it again. Rendered only as they came near, the answers further up had none."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.scenarios.test_web_chat_history_rendered_near import AT_BOTTOM, FRAMES, READ_FROM_WITHIN, RENDERED, TOP
from tests.scenarios.test_web_chat_history_rendered_near import long_answer as answer_text
from tests.scenarios.test_web_chat_screen_reader import reconnect_after
from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

ANSWERS = 30
ALL_RENDERED = "() => [...document.querySelectorAll('#messages > article > .text')].every((t) => t.childElementCount)"
EVERY_100_MS = 100  # waited for by a timer: asked at each frame, the page had frames to draw, not long idle moments
# The page's idle moments, given when the test says (each one 50 ms, as the browser's longest), not the browser's.
HELD_IDLE = "window.idle = []; window.requestIdleCallback = (work) => idle.push(work);"
IDLE_UNTIL_DONE = """async () => {
  while (idle.length) {
    const end = performance.now() + 50;
    const left = () => Math.max(0, end - performance.now());
    idle.splice(0).forEach((work) => work({ didTimeout: false, timeRemaining: left }));
    await new Promise((done) => requestAnimationFrame(done));
  }
}"""


def answer(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": answer_text(n), "time": float(n),
            "edited": False}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Any, Intake, str]]:
    intake = Intake()
    intake.messages = [answer(n) for n in range(ANSWERS)]
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


async def test_every_answer_is_rendered_after_opening_without_scrolling_the_newest_still_in_sight(served, page) -> None:
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")

    await page.wait_for_function(ALL_RENDERED, polling=EVERY_100_MS)
    await page.evaluate(FRAMES)
    assert await page.get_by_role("heading", name="Step 0", exact=True).count() == 20  # the oldest, far above
    assert await page.get_by_role("link", name="the docs").count() == 20 * ANSWERS
    assert await page.eval_on_selector("#messages", AT_BOTTOM)


async def test_rendering_the_answers_above_and_below_what_is_read_does_not_move_it(served, page) -> None:
    _, _, base = served
    await page.add_init_script(HELD_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(f"() => ({AT_BOTTOM})(document.getElementById('messages'))")
    top = await page.evaluate(READ_FROM_WITHIN, "m12")
    await page.wait_for_function(f"() => ({RENDERED})('m12') && ({RENDERED})('m11')")
    await page.evaluate(FRAMES)
    assert not await page.evaluate(RENDERED, "m2")

    await page.wait_for_function("() => idle.length")  # asked for once the page had opened
    await page.evaluate(IDLE_UNTIL_DONE)
    await page.evaluate(FRAMES)

    assert await page.evaluate(ALL_RENDERED)
    assert await page.evaluate(TOP, "m12") == pytest.approx(top, abs=1)


async def test_a_reconnect_bringing_answers_shown_as_typed_renders_them_too(served, page) -> None:
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(ALL_RENDERED, polling=EVERY_100_MS)

    # More than a short drop's few (those are rendered at once, read out) and than the newest rendered at once.
    await reconnect_after(page, adapter, intake, [answer(n) for n in range(ANSWERS, ANSWERS + 10)])

    await page.wait_for_function(ALL_RENDERED, polling=EVERY_100_MS)
    await page.evaluate(FRAMES)
    assert await page.get_by_role("heading", name=f"Step {ANSWERS}", exact=True).count() == 20
    assert await page.eval_on_selector("#messages", AT_BOTTOM)
