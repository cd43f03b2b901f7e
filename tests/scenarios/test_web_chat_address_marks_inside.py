"""A right-to-left or Arabic letter mark inside an address shows percent-encoded, live and from history: strong,
it turned round what is between them, the address reading as another host than the one it links to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agent.models.scripted import ScriptedModel
from tests.web_client import open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")

ANSWER = ("Log in at https://5.6.7.8\u200f@1.2.3.4/\u200fx then go on\n\n"
          "or at https://5.6.7.8\u061c@1.2.3.4/\u061cx then go on")

SEEN = """el => [...el.querySelectorAll("a")].map((a) => {
  const node = a.firstChild, chars = [];
  for (let i = 0; i < node.length; i++) {
    const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
    const b = r.getBoundingClientRect(); if (b.width > 0) chars.push([b.left, node.data[i]]);
  }
  return [chars.sort((x, y) => x[0] - y[0]).map((c) => c[1]).join(""),
          a.textContent.replace(/[\u200e\u200f\u061c]/g, "")];
})"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_marks_inside_an_address(chat, page) -> None:
    web = await chat(agent_model=ScriptedModel({"parent": [[{"text": ANSWER}]]}))
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, "where do I log in?")
    await page.wait_for_selector("[data-kind=reply] .text a")
    answer = await page.wait_for_selector("[data-kind=reply] .text")
    live = await answer.evaluate(SEEN)
    await open_chat(page, f"{web.base}/chat?chat=c1")  # history render
    answer = await page.wait_for_selector("[data-kind=reply] .text a")
    answer = await page.wait_for_selector("[data-kind=reply] .text")
    history = await answer.evaluate(SEEN)
    print("LIVE", live, "HISTORY", history)
    for seen in (live, history):
        for visual, logical in seen:
            assert visual == logical
