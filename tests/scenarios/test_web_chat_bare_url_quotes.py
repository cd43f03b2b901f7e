"""A bare web address between curly quotes in the web chat page (platforms/web_static/markdown.js, in a
real headless chromium), as the gateway's parser reads it for the other platforms (tests/gateway/test_literal_text.py):
the closing quote ends the address. The gateway's own late note quotes a message so (“…”), and models
write them: the link went to the address with the quote (%E2%80%9D) on its end, a page that is not there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TEXT = "see “https://example.com/a” and ‘https://example.com/b_c’, or “https://example.com/d.”"
ADDRESSES = ["https://example.com/a", "https://example.com/b_c", "https://example.com/d"]


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_the_web_chat_page_ends_an_address_at_a_closing_curly_quote(chat, page) -> None:
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", TEXT)
    await page.click("#send")
    mine = await page.wait_for_selector("[data-kind=user] .text")
    shown = await mine.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])")
    assert shown == [[a, a] for a in ADDRESSES]
    assert await mine.text_content() == TEXT
