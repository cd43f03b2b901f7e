"""A table row with more cells than its header on Telegram, Slack and Discord (platforms/formatting/tables.py):
GFM drops the extra cells, and so did every platform (``| 1 | 2 | 3 |`` under ``| a | b |`` showed ``1 | 2``).
Models write such rows (a note in a last cell, a header one short): the cells show, in a column of no name."""

from __future__ import annotations

import pytest

from platforms.formatting import discord_markdown, markdown, slack_mrkdwn, telegram_html

RENDERS = [telegram_html.render, slack_mrkdwn.render, discord_markdown.render]


def block(render, text: str) -> str:
    """The code block ``render`` makes of ``text``, without its markup."""
    rendered = render(text)
    if render is telegram_html.render:
        assert rendered.startswith("<pre>") and rendered.endswith("</pre>"), rendered
        return rendered[5:-6].replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
    assert rendered.startswith("```\n") and rendered.endswith("\n```"), rendered
    return rendered[4:-4]


@pytest.mark.parametrize("render", RENDERS)
def test_a_rows_extra_cell_shows_in_a_column_of_no_name(render) -> None:
    assert block(render, "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n| 4 | 5 |") == "a | b\n--+---+--\n1 | 2 | 3\n4 | 5"


@pytest.mark.parametrize("render", RENDERS)
def test_an_extra_cell_keeps_its_escaped_pipes_code_and_line_breaks(render) -> None:
    table = "| k |\n|---|\n| x | `str \\| None` | one<br>two |\n> | q |\n> |---|\n> | y | z |"
    assert block(render, table.split("\n>")[0]) == ("k\n--+-------------+----\n"
                                                     "x | str \\| None | one\n  |             | two")
    assert "y | z" in render(table)  # in a quote: its rows read without their >


@pytest.mark.parametrize(("render", "note"), [(telegram_html.render, "• <i>check</i> twice"),
                                              (slack_mrkdwn.render, "• _check_ twice"),
                                              (discord_markdown.render, "- *check* twice")])
def test_in_a_table_too_wide_for_a_phone_an_extra_cell_is_an_item_of_no_label(render, note) -> None:
    table = "| Tool | What it does |\n|---|---|\n| ruff | lints and formats Python, in Rust | *check* twice |"
    assert render(table).split("\n")[-1] == note


def test_both_parsers_give_the_extra_cells_and_the_header_a_cell_for_each() -> None:
    text = "| a | b |\n|---|:-:|\n| 1 | 2 | 3 \\| 4 | 5 |\n| 6 |"

    def cells(tokens) -> list[list[str]]:
        rows: list[list[str]] = []
        for i, tok in enumerate(tokens):
            if tok.type == "tr_open":
                rows.append([])
            elif tok.type in ("th_open", "td_open"):
                rows[-1].append(tokens[i + 1].content + ("|" + str(tok.attrGet("style")) if tok.attrs else ""))
        return rows

    expected = [["a", "b|text-align:center", "", ""], ["1", "2|text-align:center", "3 | 4", "5"],
                ["6", "|text-align:center"]]
    assert cells(markdown.parse(text)) == cells(markdown.block_tokens(text)) == expected
    tokens = markdown.parse(text)
    assert [t.children[0].content for t in tokens if t.type == "inline" and t.content == "3 | 4"] == ["3 | 4"]
    opened = [t.level for t in tokens if t.type == "td_open"]
    assert len(set(opened)) == 1  # the added cells nest as the others do
