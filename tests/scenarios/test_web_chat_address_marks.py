"""An invisible mark after a web address in the web chat page (platforms/web_static/markdown.js, in a real
headless chromium): a right-to-left mark after an address in Hebrew or Arabic, a zero-width space, a word joiner
(Unicode's format characters). The page took it into the link, which went to another page (…/a%E2%80%8F); as on
the other platforms (tests/platforms/test_address_invisible_marks.py) it is shown after the link."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TEXT = ("ראה https://example.com/a\u200f עוד, https://example.com/b\u200b! <https://example.com/c\u2060> "
        "https://example.com/d\u200fe")
LINKS = [["https://example.com/a"] * 2, ["https://example.com/b"] * 2, ["https://example.com/c"] * 2,
         # Within an address, a mark is the address's own, as Markdown reads it, and shows percent-encoded.
         ["https://example.com/d\u200fe", "https://example.com/d%E2%80%8Fe"]]


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_the_web_chat_page_shows_an_invisible_mark_after_an_address_after_its_link(chat, page) -> None:
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", TEXT)
    await page.click("#send")
    mine = await page.wait_for_selector("[data-kind=user] .text")
    shown = await mine.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])")
    assert shown == LINKS
    assert await mine.text_content() == TEXT.replace("<", "").replace(">", "").replace("d\u200fe", "d%E2%80%8Fe")


async def test_the_web_chat_page_links_an_address_ending_in_a_joiner_or_an_emojis_tags_whole(chat, page) -> None:
    # A zero-width joiner after a virama ends a Malayalam word, tag characters the flag of Scotland: the address's
    # own. "https://" and a mark is no address, as "https://" alone is none.
    own = ["https://ml.wikipedia.org/wiki/\u0d05\u0d35\u0d28\u0d4d\u200d",
           "https://example.com/\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]
    text = f"see {own[0]} and {own[1]} but not https://\u200f here"
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", text)
    await page.click("#send")
    mine = await page.wait_for_selector("[data-kind=user] .text")
    shown = await mine.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])")
    assert shown == [[own[0], own[0]], [own[1], own[1]]]
    assert await mine.text_content() == text
