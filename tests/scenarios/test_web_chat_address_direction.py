"""An address written as itself in the web chat page (platforms/web_static/markdown.js, in a real headless chromium)
reads as the address its link goes to, whatever direction controls the text holds. A right-to-left override in it
showed ``https://\\u202emoc.elgoog.www@evil.example/`` as ``https://elpmaxe.live@www.google.com/``, its link going to
evil.example, and turned the text after it round too; one before it turned the whole address round, so that
``https://evil.example/moc.elgoog.www//:sptth`` showed as ``https://www.google.com/…``. A model says what a page it
read tells it to: such an answer is a link to click, disguised."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agent.models.scripted import ScriptedModel
from tests.web_client import open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

ANSWER = ("Log in at https://\u202emoc.elgoog.www@evil.example/ then go on\n\n"
          "or at <https://\u2067moc.elgoog.www@evil.example/> then go on\n\n"
          "or \u202eat https://evil.example/moc.elgoog.www//:sptth")

# Each link of the answer: its text, the address it goes to, and whether its characters, and those of the text after
# it, are laid out left to right in the order they are read (each starting no further left than the one before,
# up to the end of its line).
LAID_OUT = """el => {
  const inOrder = (node) => {
    let left = -Infinity;
    for (let i = 0; node && i < node.length && node.data[i] !== "\\n"; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const x = range.getBoundingClientRect().left;
      if (x < left) return false;
      left = x;
    }
    return true;
  };
  return [...el.querySelectorAll("a")].map((a) => [a.textContent, a.href, inOrder(a.firstChild),
                                                   inOrder(a.nextSibling)]);
}"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_an_address_written_as_itself_reads_as_the_address_its_link_goes_to(chat, page) -> None:
    web = await chat(agent_model=ScriptedModel({"parent": [[{"text": ANSWER}]]}))
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, "where do I log in?")
    answer = await page.wait_for_selector("[data-kind=reply] .text")
    assert await answer.evaluate(LAID_OUT) == [
        # The controls show as the address holds them, percent-encoded, as the address bar shows them.
        ["https://%E2%80%AEmoc.elgoog.www@evil.example/"] * 2 + [True, True],
        ["https://%E2%81%A7moc.elgoog.www@evil.example/"] * 2 + [True, True],
        ["https://evil.example/moc.elgoog.www//:sptth"] * 2 + [True, True]]
