"""A `<br>` in a table cell of an answer in the web chat page (platforms/web_static/markdown.js, in a real
headless chromium): a line break, as Telegram, Slack and Discord show it (platforms/formatting/tables.py). Models
write one to start a line in a cell; the page drew real tables, but showed each `<br>` as typed. Any other HTML
stays text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agent.models.scripted import ScriptedModel
from platforms.formatting import markdown
from tests.web_client import open_chat, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TABLE = ("| Option | Pros<br>(short) | Notes |\n"
         "|---|---|---|\n"
         "| A | fast <BR /> cheap<br/>small | `a<br>b` and <b>bold</b> |\n"
         "| B | **robust<br>tested** | [docs<br>here](https://example.com/b) |\n"
         '| C | one<br onclick="alert(1)">two | not\\<br>broken, &lt;br&gt; either |')
ANSWER = TABLE + "\n\nOutside a table <br> is text."

# Each table row's cells, as their HTML.
CELLS_HTML = """el => [...el.querySelectorAll("tr")].map(tr => [...tr.cells].map(c => c.innerHTML))"""
# Each table row's cells, as their lines of text.
CELL_LINES = """el => [...el.querySelectorAll("tr")].map(tr => [...tr.cells].map(c => {
  const copy = c.cloneNode(true);
  copy.querySelectorAll("br").forEach(br => br.replaceWith("\\n"));
  return copy.textContent;
}))"""


def gateway_lines(text: str) -> list[list[str]]:
    """`CELL_LINES` of ``text`` as the gateway reads it for the other platforms."""
    rows: list[list[str]] = []
    tokens = markdown.parse(text)
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            rows[-1].append(markdown.plain(tokens[i + 1].children or ()))
    return rows


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_br_in_a_table_cell_of_an_answer_is_a_line_break_and_other_html_stays_text(chat, page) -> None:
    web = await chat(agent_model=ScriptedModel({"parent": [[{"text": ANSWER}]]}))
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, "compare them")
    await page.wait_for_selector("[data-kind=reply] .text table")
    answer = await page.query_selector("[data-kind=reply] .text")
    link = '<a href="https://example.com/b" rel="noopener noreferrer" target="_blank">docs<br>here</a>'
    assert await answer.evaluate(CELLS_HTML) == [
        ["Option", "Pros<br>(short)", "Notes"],
        ["A", "fast<br>cheap<br>small", "<code>a&lt;br&gt;b</code> and &lt;b&gt;bold&lt;/b&gt;"],
        ["B", "<strong>robust<br>tested</strong>", link],
        # Escaped, or as entity references, it is text, as in any Markdown; so is a tag with more in it.
        ["C", 'one&lt;br onclick="alert(1)"&gt;two', "not&lt;br&gt;broken, &lt;br&gt; either"]]
    # The lines each cell shows are the ones the other platforms show, an escaped <br> one line with them too.
    assert await answer.evaluate(CELL_LINES) == gateway_lines(TABLE)
    # Outside a table a <br> shows as typed: every line break is a cell's.
    assert await answer.eval_on_selector_all("br", "els => els.length") == 5
    assert await answer.eval_on_selector_all("table br", "els => els.length") == 5
    assert (await answer.text_content()).endswith("Outside a table <br> is text.")
