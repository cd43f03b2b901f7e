"""The web chat page (chat.js) opening a history whose older answers show as typed until scrolled near
(`test_web_chat_history_rendered_near`; the page never idle, they stay so), in a real headless chromium: a keyboard's
Tab still goes from one answer's link to the next answer's, however far below it is, not past it to the newest
answers or the input."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.scenarios.test_web_chat_history_rendered_near import NEVER_IDLE
from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

LOG = "\n".join(f"line {n} of a long log, nothing to follow in it" for n in range(60))
NEWER = "A later answer, words only. " * 200  # past the characters rendered at once, with the ones after it
FOCUSED_HREF = "() => document.activeElement.getAttribute('href')"


@pytest_asyncio.fixture(loop_scope="session")
async def base(tmp_path) -> AsyncIterator[str]:
    intake = Intake()
    # Logs enough that, laid out or still estimated (chat.css), they reach past two windows' height.
    texts = ["See [the first guide](https://example.com/first).", *[LOG] * 8,
             "Then [the second guide](https://example.com/second).", *[NEWER] * 6]
    intake.messages = replies(texts)
    async with chat_alone(intake, tmp_path / "files") as (_, url):
        yield url


async def test_tab_from_a_link_reaches_the_next_answers_link_shown_as_typed(base, page) -> None:
    await page.add_init_script(NEVER_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate("() => { document.getElementById('messages').scrollTop = 0; }")
    link = page.get_by_role("link", name="the first guide")
    await link.focus()

    await page.keyboard.press("Tab")
    assert await page.evaluate(FOCUSED_HREF) == "https://example.com/second"

    await page.keyboard.press("Shift+Tab")
    assert await page.evaluate(FOCUSED_HREF) == "https://example.com/first"


async def test_tab_from_the_commands_reaches_the_oldest_answers_link_first(base, page) -> None:
    await page.add_init_script(NEVER_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.get_by_role("button", name="New session").focus()

    await page.keyboard.press("Tab")  # the message list, a Tab stop of its own (its keys scroll it)
    assert await page.evaluate("document.activeElement.id") == "messages"
    await page.keyboard.press("Tab")
    assert await page.evaluate(FOCUSED_HREF) == "https://example.com/first"
