"""The web chat page (chat.js) opening a history of long answers, in a real headless chromium against the adapter
alone: only the newest answers' Markdown is rendered at once; an answer out of sight shows its text as typed, every
word of it (find-in-page, a screen reader), until it is scrolled near, and rendering it then does not move what the
reader looks at. Fifty answers of 50 KB, every one rendered to open the page, took 1.1 s of its 1.7 s
(bench/web_render_bench.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

ANSWERS = 30
AT_BOTTOM = "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"
FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
RENDERED = "(id) => document.querySelector(`[data-id=${id}] > .text`).childElementCount > 0"
# Where the top of the answer is, against the top of the window, once the reader scrolled to read it from 200 px in.
READ_FROM_WITHIN = """(id) => {
  const list = document.getElementById("messages");
  const el = document.querySelector(`[data-id=${id}]`);
  el.scrollIntoView();
  list.scrollTop += 200;
  return el.getBoundingClientRect().top - list.getBoundingClientRect().top;
}"""
# A page never idle: what it renders when idle (`test_web_chat_history_rendered_when_idle`) does not come.
NEVER_IDLE = "window.requestIdleCallback = () => 0;"
TOP = """(id) => document.querySelector(`[data-id=${id}]`).getBoundingClientRect().top
  - document.getElementById("messages").getBoundingClientRect().top"""


def long_answer(n: int) -> str:
    section = (f"## Step {n}\n\nThe **first** thing is the *timeout* of `connect()`: see "
               f"[the docs](https://example.com/{n}).\n\n- one\n- two\n\n"
               "```python\nclient = Client(timeout=10)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n")
    return section * 20 + f"The end of answer {n}."


@pytest_asyncio.fixture(loop_scope="session")
async def base(tmp_path) -> AsyncIterator[str]:
    intake = Intake()
    intake.messages = replies(long_answer(n) for n in range(ANSWERS))
    async with chat_alone(intake, tmp_path / "files") as (_, url):
        yield url


async def test_an_answer_out_of_sight_shows_as_typed_until_scrolled_near_then_renders_in_place(base, page) -> None:
    await page.add_init_script(NEVER_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(f"() => ({AT_BOTTOM})(document.getElementById('messages'))")
    await page.evaluate(FRAMES)

    assert await page.evaluate(RENDERED, f"m{ANSWERS - 1}")  # the newest, in sight
    assert not await page.evaluate(RENDERED, "m12")
    # Every word is there, as typed, for find-in-page and a screen reader.
    assert await page.text_content("[data-id=m12] > .text") == long_answer(12)

    top = await page.evaluate(READ_FROM_WITHIN, "m12")
    await page.wait_for_function(f"() => ({RENDERED})('m12') && ({RENDERED})('m11')")  # it, and the one above it
    await page.evaluate(FRAMES)

    assert await page.evaluate(TOP, "m12") == pytest.approx(top, abs=1)  # what the reader looks at did not move
    assert await page.get_by_role("heading", name="Step 12").first.is_visible()
    assert not await page.evaluate(RENDERED, "m2")  # far above: still as typed


async def test_printing_renders_every_answer(base, page) -> None:
    await page.add_init_script(NEVER_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.pdf()

    assert await page.evaluate(RENDERED, "m0")
