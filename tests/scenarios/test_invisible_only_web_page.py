"""The web chat page given a message that shows nothing, only invisible characters (zero-width spaces, word joiners:
what `platforms.formatting.blank.is_blank` calls blank): not sent, as an empty one is not, its text left in the box.
It went, the gateway refused it (400), and it showed in red. The page's set of such characters is the gateway's. A
real headless chromium against a `WebChatAdapter`."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from platforms.formatting.blank import is_blank
from tests.web_client import Intake, chat_alone, open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

CHAT_JS = Path(__file__).resolve().parents[2] / "platforms" / "web_static" / "chat.js"
BLANK_OF = """() => {
  const blank = %s;
  const found = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if ((c < 0xd800 || c > 0xdfff) && blank.test(String.fromCodePoint(c))) found.push(c);
  }
  return found;
}"""


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_message_of_invisible_characters_alone_is_not_sent_as_an_empty_one_is_not(served, page) -> None:
    intake, base = served
    posted: list[str] = []
    page.on("request", lambda request: request.method == "POST" and posted.append(request.post_data_json["text"]))
    await open_chat(page, f"{base}/chat?chat=c1")
    for text in ("   ", "\u200b", "\u200b\u2060", " \ufeff\n\u200d", "\ufe0f\u2800"):
        await type_message(page, text)
        await page.click("#send")
        assert await page.input_value("#input") == text  # left where it was typed
    await type_message(page, "hello")
    await page.locator("[data-role=user]:not(.pending)").wait_for()
    assert (posted, intake.texts) == (["hello"], ["hello"])  # in order: what was typed before went before it
    assert await page.locator("#messages > article").count() == 1  # none refused in red


async def test_the_pages_characters_that_show_nothing_are_the_gateways(page) -> None:
    found = re.search(r"const BLANK = (new RegExp\(.*?\));", CHAT_JS.read_text(encoding="utf-8"), re.S)
    assert found is not None
    shown_nothing = await page.evaluate(BLANK_OF % found.group(1))
    assert shown_nothing == [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and is_blank(chr(c))]
