"""A model's tables on Telegram, Slack and Discord (platforms/formatting/tables.py): ``<br>`` in a cell, a
cell's ``\\|``, empty last cells, columns as wide as what a reader sees, and a table too wide for a phone."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.telegram import TelegramAdapter


def block(markdown: str) -> str:
    """The code block Discord gets for ``markdown``, without its fences."""
    rendered = discord_markdown.render(markdown)
    assert rendered.startswith("```\n") and rendered.endswith("\n```"), rendered[:200]
    return rendered[4:-4]


def test_a_br_in_a_cell_is_a_line_of_its_row_and_rules_then_part_the_rows() -> None:
    # Models write <br> in cells to start a line: it showed as typed, "fast<br>cheap".
    table = "| Option | Pros | Cons |\n|---|---|---|\n| A | fast<br>cheap | fragile |\n| B | robust | slow<BR/>costly |"
    assert block(table) == ("Option | Pros   | Cons\n"
                            "-------+--------+--------\n"
                            "A      | fast   | fragile\n"
                            "       | cheap\n"
                            "-------+--------+--------\n"
                            "B      | robust | slow\n"
                            "       |        | costly")


def test_a_br_in_code_or_outside_a_table_stays_as_typed() -> None:
    assert block("| a | b |\n|---|---|\n| `x<br>y` | z |") == "a      | b\n-------+--\nx<br>y | z"
    assert discord_markdown.render("one<br>two") == "one<br>two"


def test_a_br_escaped_or_written_as_entities_in_a_cell_shows_as_typed() -> None:
    # markdown-it joins an escape or an entity to the text around it, where "\\<br>" and "&lt;br&gt;" then read as
    # the tag: a line break, where the web chat and any Markdown show them as typed.
    table = "| a | b |\n|---|---|\n| x\\<br>y | &lt;br&gt;z &lt;br>w <br&gt;v |"
    assert block(table) == "a      | b\n-------+------------------\nx<br>y | <br>z <br>w <br>v"
    # A backslash escaped is no escape of the tag after it.
    assert block("| a |\n|---|\n| x\\\\<br>y |") == "a\n--\nx\\\ny"


def test_a_cells_pipe_is_shown_escaped_never_as_a_columns_edge() -> None:
    # "str | None" read as two columns.
    table = "| name | type |\n|---|---|\n| x | `str \\| None` |"
    assert block(table) == "name | type\n-----+------------\nx    | str \\| None"


def test_a_row_ends_at_its_last_cell_holding_something() -> None:
    # "x |   |": a dangling pipe, as if a column followed.
    assert block("| a | b | c |\n|---|---|---|\n| x | | |\n| y | z | |") == "a | b | c\n--+---+--\nx\ny | z"


@pytest.mark.parametrize("cell", ["e\u0301te\u0301", "👍🏽", "👨‍👩‍👧", "❤️", "🇫🇷", "中"])
def test_columns_are_as_wide_as_the_characters_a_reader_sees(cell: str) -> None:
    # An accent, a skin tone, joined emoji and a variation selector were counted as columns: the row's | stood
    # further right than the others'.
    wide = 2 if cell != "e\u0301te\u0301" else 3
    lines = block(f"| k | v |\n|---|---|\n| {cell} | 1 |\n| abc | 2 |").split("\n")
    assert lines[2] == f"{cell}{' ' * (3 - wide)} | 1" and lines[3] == "abc | 2"


def test_a_cell_of_many_flags_is_measured_at_once() -> None:
    start = time.perf_counter()
    assert block("| k |\n|---|\n| " + "🇫🇷" * 20_000 + " |").count("🇫🇷") == 20_000  # one column: no list
    assert time.perf_counter() - start < 2  # regex's \X walks back over the flags at each: 20 s


WIDE = ("| Tool | What it does | Docs |\n|---|---|---|\n"
        "| **ruff** | lints and formats Python<br>in Rust | [the docs](https://docs.astral.sh/ruff) |\n"
        "| mypy | type checks | |\n")


@pytest.mark.parametrize(("render", "expected"), [
    (telegram_html.render, "<b>ruff</b>\n• What it does: lints and formats Python\n  in Rust\n"
                           '• Docs: <a href="https://docs.astral.sh/ruff">the docs</a>\n\n<b>mypy</b>\n'
                           "• What it does: type checks"),
    (slack_mrkdwn.render, "*ruff*\n• What it does: lints and formats Python\n  in Rust\n"
                          "• Docs: <https://docs.astral.sh/ruff|the docs>\n\n*mypy*\n• What it does: type checks"),
    (discord_markdown.render, "**ruff**\n- What it does: lints and formats Python\n  in Rust\n"
                              "- Docs: [the docs](https://docs.astral.sh/ruff)\n\n"
                              "**mypy**\n- What it does: type checks"),
])
def test_a_table_too_wide_for_a_phone_is_a_list_per_row(render, expected) -> None:
    # As aligned columns it was 66 wide: a phone wraps a code block's lines at some 35, its columns broken apart.
    assert render(WIDE) == expected


def test_a_narrow_table_stays_aligned_columns() -> None:
    assert block("| a | b |\n|---|---|\n| 1 | 22 |") == "a | b\n--+---\n1 | 22"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_on_telegram_a_br_table_and_a_wide_one_reach_the_chat_readable(fake: FakeTelegram) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    try:
        table = "| a | b |\n|---|---|\n| x<br>y | \\| |\n\n"
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=table + WIDE))
    finally:
        await adapter.stop()
    [message] = fake.messages["42"]
    text = message["text"]
    assert text.startswith("a | b\n--+---\nx | \\|\ny\n\nruff\n• What it does: lints and formats Python\n  in Rust\n")
    spans = [(e["type"], text[e["offset"]:e["offset"] + e["length"]], e.get("url")) for e in message["entities"]]
    assert spans == [("pre", "a | b\n--+---\nx | \\|\ny", None), ("bold", "ruff", None),
                     ("text_link", "the docs", "https://docs.astral.sh/ruff"), ("bold", "mypy", None)]
