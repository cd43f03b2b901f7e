"""A table row with more cells than its header in an answer in the web chat page (platforms/web_static/markdown.js,
in a real headless chromium): the cells beyond the header's show, under empty header cells, as on Telegram, Slack
and Discord (platforms/formatting/tables.py). GFM drops them, and the page did: `| 1 | 2 | 3 |` under `| a | b |`
showed 1 and 2 only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agent.models.scripted import ScriptedModel
from platforms.formatting import markdown
from tests.web_client import open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TABLE = ("| Option | Cost |\n"
         "|:--|--:|\n"
         "| A | 1 | cheap, `x \\| y` | *check* twice |\n"
         "| B |\n"
         "| C | 3 | one<br>two |")

# Each table row's cells: its tag, its text (a line break as \n) and its alignment class.
CELLS = """el => [...el.querySelectorAll("tr")].map(tr => [...tr.cells].map(c => {
  const copy = c.cloneNode(true);
  copy.querySelectorAll("br").forEach(br => br.replaceWith("\\n"));
  return [c.tagName.toLowerCase(), copy.textContent, c.className];
}))"""


def gateway_cells(text: str) -> list[list[list[str]]]:
    """`CELLS` of ``text`` as the gateway reads it for the other platforms."""
    rows: list[list[list[str]]] = []
    tokens = markdown.parse(text)
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            align = str(token.attrGet("style") or "").removeprefix("text-align:")
            rows[-1].append([token.tag, markdown.plain(tokens[i + 1].children or ()), align])
    return rows


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_rows_cells_beyond_its_headers_show_under_empty_header_cells(chat, page) -> None:
    web = await chat(agent_model=ScriptedModel({"parent": [[{"text": TABLE}]]}))
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, "compare them")
    await page.wait_for_selector("[data-kind=reply] .text table")
    answer = await page.query_selector("[data-kind=reply] .text")
    shown = await answer.evaluate(CELLS)
    assert shown == [
        [["th", "Option", "left"], ["th", "Cost", "right"], ["th", "", ""], ["th", "", ""]],
        [["td", "A", "left"], ["td", "1", "right"], ["td", "cheap, x | y", ""], ["td", "check twice", ""]],
        [["td", "B", "left"], ["td", "", "right"]],  # missing cells empty up to the header's, as in markdown-it
        [["td", "C", "left"], ["td", "3", "right"], ["td", "one\ntwo", ""]]]
    assert shown == gateway_cells(TABLE)
    assert await answer.eval_on_selector_all("td em, td code", "els => els.map(e => e.textContent)") == [
        "x | y", "check"]
