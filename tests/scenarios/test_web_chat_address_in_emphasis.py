"""A bare web address in a style, or before CJK punctuation, on the web chat's page (platforms/web_static/markdown.js,
in a real headless chromium), as the gateway reads it for the other platforms (tests/platforms/
test_address_in_emphasis.py): the markers closing a style opened before the address end it, and so does CJK
punctuation; an address's own ``*``, ``_``, ``~`` and CJK letters stay in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.formatting import markdown
from tests.scenarios.test_web_chat_markdown import STYLED, gateway_styled
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TEXTS = ["**https://e.co/**を参照してください", "**https://e.co/x**-based", "~~https://e.co/~~を参照", "*https://e.co/*を参照",
         "__https://e.co/x__-based", "_https://e.co/x_-based", "**https://e.co/x**abc", "https://e.co/a**b",
         "https://ja.wikipedia.org/wiki/日本語", "**https://ja.wikipedia.org/wiki/日本語**です", "https://e.co/~user",
         "https://e.co/a_b_c", "~~https://e.co/~user~~", "_https://e.co/a_b_c_",
         "文档见https://example.com/docs，然后点击安装", "見てhttps://e.co/a（説明）"]
LINKS = """el => [...el.querySelectorAll("a")].map(a => [a.getAttribute("href"), a.textContent])"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


def gateway_links(text: str) -> list[list[str]]:
    """`LINKS` of ``text`` as markdown-it reads it for the other platforms."""
    out = []
    for token in markdown.parse(text):
        children = token.children or []
        out += [[str(c.attrGet("href")), children[i + 1].content] for i, c in enumerate(children)
                if c.type == "link_open"]
    return out


async def test_an_address_in_a_style_or_before_cjk_punctuation_is_linked_as_the_gateway_links_it(chat, page) -> None:
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    shown = await page.evaluate("""(texts) => texts.map((text) => {
      const into = document.createElement("div");
      SwitchboardMarkdown.render(text, into);
      return [(""" + LINKS + """)(into), (""" + STYLED + """)(into)];
    })""", TEXTS)
    expected = [[gateway_links(t), gateway_styled(t)] for t in TEXTS]
    assert shown == expected
    # The gateway's own reading of them, which the other platforms show (tests/platforms/test_address_in_emphasis.py).
    assert [links for links, _ in expected] == [
        [["https://e.co/", "https://e.co/"]], [["https://e.co/x", "https://e.co/x"]],
        [["https://e.co/", "https://e.co/"]], [["https://e.co/", "https://e.co/"]],
        [["https://e.co/x", "https://e.co/x"]], [["https://e.co/x", "https://e.co/x"]],
        [["https://e.co/x", "https://e.co/x"]], [["https://e.co/a**b", "https://e.co/a**b"]],
        [["https://ja.wikipedia.org/wiki/日本語"] * 2], [["https://ja.wikipedia.org/wiki/日本語"] * 2],
        [["https://e.co/~user", "https://e.co/~user"]], [["https://e.co/a_b_c", "https://e.co/a_b_c"]],
        [["https://e.co/~user", "https://e.co/~user"]], [["https://e.co/a_b_c", "https://e.co/a_b_c"]],
        [["https://example.com/docs", "https://example.com/docs"]], [["https://e.co/a", "https://e.co/a"]]]
