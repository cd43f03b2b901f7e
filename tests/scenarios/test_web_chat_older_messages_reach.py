"""The web chat page's older messages where no scroll asks for them, in a real headless chromium against the adapter
alone: a history that fits the window (a small ``history_limit``, a tall screen) never scrolls, so scrolling up brought
nothing and nothing said there was more; and the message list, a Tab stop only while it scrolled (Chromium's own
focusable scrollers; Safari makes none), could not be reached by keyboard then. The page now offers a "Show older
messages" button while there are more, and the list is a Tab stop of its own whose keys going up, at its top, ask
for them. Loaded, the older messages are not read out. Every wait is for something on the page, never for time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.browser import contrast_failures
from tests.scenarios.test_web_chat_accessibility import FOCUSED
from tests.scenarios.test_web_chat_catch_up_read_out import LISTEN
from tests.scenarios.test_web_chat_older_messages import IDS, more_shown_than
from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

EVERYTHING = [f"m{n}" for n in range(12)]
IN_SIGHT = """el => { const list = document.getElementById("messages").getBoundingClientRect();
  const r = el.getBoundingClientRect(); return r.bottom > list.top && r.top < list.bottom; }"""


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    """An adapter whose pages open with the last 3 of 12 short messages: a few lines, well within the window."""
    intake = Intake()
    intake.messages = replies(f"answer {n}" for n in range(12))
    async with chat_alone(intake, tmp_path / "files", history_limit=3) as (adapter, base):
        yield adapter, intake, base


@pytest_asyncio.fixture(loop_scope="session")
async def long_served(tmp_path) -> AsyncIterator[str]:
    """An adapter whose pages open with the last 10 of 35 messages, screens of them: the base url."""
    intake = Intake()
    intake.messages = replies(f"answer {n}" + "\n\nand a paragraph more" * 5 for n in range(35))
    async with chat_alone(intake, tmp_path / "files", history_limit=10) as (_, base):
        yield base


async def opened(page: Any, base: str) -> None:
    await open_chat(page, f"{base}/chat?chat=c1")
    assert await page.eval_on_selector_all("#messages > article", IDS) == ["m9", "m10", "m11"]
    assert await page.eval_on_selector("#messages", "el => el.scrollHeight <= el.clientHeight")  # it cannot scroll
    await page.evaluate(LISTEN)


async def test_a_history_that_fits_the_window_offers_older_messages_and_the_button_brings_them(served, page) -> None:
    _, _, base = served
    await opened(page, base)
    button = page.get_by_role("button", name="Show older messages")
    await button.wait_for()  # it used to show the last 3 as the whole conversation, with nothing above them
    for scheme in ["light", "dark"]:
        await page.emulate_media(color_scheme=scheme)
        assert await contrast_failures(page) == []
    await page.focus("#input")
    await page.keyboard.press("Shift+Tab")  # the list
    await page.keyboard.press("Shift+Tab")
    assert await page.evaluate(FOCUSED) == ["show-older", True]
    await page.keyboard.press("Enter")
    await more_shown_than(page, 3)
    # Asked for, they come into sight: the one just above the messages the page opened with shows.
    assert await page.eval_on_selector("[data-id=m8]", IN_SIGHT)
    while await button.is_visible():  # a history's worth a press, for as long as the gateway has more
        count = len(await page.eval_on_selector_all("#messages > article", IDS))
        await page.keyboard.press("Enter")
        await more_shown_than(page, count)
    assert await page.eval_on_selector_all("#messages > article", IDS) == EVERYTHING
    # Hidden with the focus on it, it does not take the focus with it: that goes to the messages it brought.
    assert await page.evaluate("document.activeElement.id") == "messages"
    assert [text for text in await page.evaluate("window.heard") if "answer" in text] == []  # the past: not read out


async def test_the_message_list_is_a_tab_stop_and_keys_going_up_at_its_top_bring_older_messages(served, page) -> None:
    _, _, base = served
    await opened(page, base)
    await page.focus("#input")
    await page.keyboard.press("Shift+Tab")
    # Chromium made the list a Tab stop only while it scrolled: this one does not, and the keyboard went past it.
    assert await page.evaluate(FOCUSED) == ["messages", True]
    assert await page.get_by_role("log", name="Messages").evaluate("el => el === document.activeElement")
    for key in ["Home", "PageUp", "ArrowUp"]:  # at the top each scrolls nothing, so no scroll asks: the key does
        count = len(await page.eval_on_selector_all("#messages > article", IDS))
        await page.wait_for_function("() => document.getElementById('messages').scrollTop < 1")  # laid out: the top
        await page.keyboard.press(key)
        await more_shown_than(page, count)
    assert await page.eval_on_selector_all("#messages > article", IDS) == EVERYTHING
    assert [text for text in await page.evaluate("window.heard") if "answer" in text] == []


async def test_the_button_shows_the_older_messages_it_brings_from_anywhere_in_a_long_chat(long_served, page) -> None:
    await open_chat(page, f"{long_served}/chat?chat=c1")  # at the bottom, m25 screens above
    await page.get_by_role("button", name="Show older messages").click()
    await more_shown_than(page, 10)
    # Not loaded out of sight, screens above, with nothing seen to change: the newest of them shows, above m25.
    await page.wait_for_function("() => !document.querySelector('#older:not([hidden])')")
    assert await page.eval_on_selector("[data-id=m24]", IN_SIGHT)
    assert await page.eval_on_selector("[data-id=m25]", IN_SIGHT)  # where they join what showed before


async def test_try_again_hands_the_focus_to_the_button_it_gives_way_to(served, page) -> None:
    _, _, base = served
    await opened(page, base)
    await page.route("**/chat/api/history?*", lambda route: route.abort("internetdisconnected"))
    await page.focus("#show-older")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#older.failed")
    assert await page.evaluate("document.activeElement.textContent") == "Try again"
    await page.unroute("**/chat/api/history?*")
    await page.keyboard.press("Enter")
    await more_shown_than(page, 3)
    # Hidden while it loaded, Try again took the focus with it (to the page's start): it goes to the button it gave
    # way to, which brings the rest.
    assert await page.evaluate(FOCUSED) == ["show-older", True]
