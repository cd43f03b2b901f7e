"""split_text on long tables, as a model answers with one, with each platform's own measure and limit: every part
fits what the platform counts, starts with the table's header rows, and no cell is lost. Each part repeats the
header, which alone measured otherwise than with rows (a code block, where rows make a list per row), so the search
for a part's end guessed from the header and a piece of a row that the part held many rows: it rendered the rest
of the table for every part, and an 80 KB table of 200 columns took minutes to split for Discord
(`bench/split_bench.py` has the figures); now it is searched a row at a time, each row rendered once."""

from __future__ import annotations

import pytest

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter


def _telegram_sent(part: str) -> int:
    """What Telegram counts, past its limit when a part holds more formatted spans than it reads."""
    text, entities = parse_html(telegram_html.render(part))
    return utf16_length(text) if len(entities) <= telegram_html.MAX_ENTITIES else 10**9


_ADAPTERS = {
    "telegram": (TelegramAdapter("123:token"), _telegram_sent),
    "discord": (DiscordAdapter("token"), lambda part: len(discord_markdown.render(part))),
    "slack": (SlackAdapter(bot_token="xoxb-1", app_token="xapp-1"), lambda part: len(slack_mrkdwn.render(part))),
}
_CELLS = ("`timeout`", "**10 s**", "retries", "[docs](https://example.com/d)", "_seconds_", "~~old~~", "none")


def _table(rows: int, columns: int, cell) -> tuple[str, str]:
    """A table's Markdown, written with no space to spare (its header rows, in a part of their own, are read as
    text: no part of Discord's holds those of 200 columns written ``| col0 | col1 |``), and its header rows."""
    header = "|" + "|".join(f"col{c}" for c in range(columns)) + "|\n" + "|" + "-|" * columns + "\n"
    body = "".join("|" + "|".join(cell(r, c) for c in range(columns)) + "|\n" for r in range(rows))
    return header + body, header


def _cells(parts: list[str]) -> list[tuple[str, str, str]]:
    """Each body cell that holds something, in order: its row's first cell, its column's header, its text."""
    found = []
    for part in parts:
        tokens = markdown.parse(part)
        header: list[str] = []
        row: list[str] = []
        for tok, inline in zip(tokens, tokens[1:]):
            if tok.type == "tr_open":
                row = []
            elif tok.type in ("th_open", "td_open"):
                (header if tok.type == "th_open" else row).append(inline.content)
            elif tok.type == "tr_close" and row:
                found += [(row[0], header[k], cell) for k, cell in enumerate(row) if k and cell]
        assert header, part
    return found


def _split(text: str, header: str, platform: str) -> list[str]:
    adapter, sent = _ADAPTERS[platform]
    parts = split_text(text, adapter.text_limit, adapter.measure)
    assert [len(p) for p in parts if sent(p) > adapter.text_limit] == []
    assert [p[:80] for p in parts if not p.startswith(header)] == []
    return parts


@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
def test_a_long_table_of_fifty_columns_splits_between_rows_each_part_under_the_header(platform):
    text, header = _table(60, 50, lambda r, c: f"{_CELLS[(r + c) % len(_CELLS)]} {r}.{c}")  # about 40 KB
    parts = _split(text, header, platform)
    assert len(parts) > 5
    assert _cells(parts) == _cells([text])


@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
def test_a_table_of_two_hundred_columns_splits_each_row_after_a_pipe_losing_no_cell(platform):
    # One-character cells: a row's list of "col7: 3" items is about a Discord message, so rows are cut too.
    text, header = _table(30, 200, lambda r, c: str((r * 7 + c) % 10))
    parts = _split(text, header, platform)
    assert len(parts) >= 30 if platform == "discord" else len(parts) > 5
    assert sorted(_cells(parts)) == sorted(_cells([text]))


@pytest.mark.parametrize("platform", ["len", "telegram", "slack"])
def test_a_rows_rest_cut_as_plain_text_ends_where_it_fits_not_past_a_row_end(platform):
    # A link longer than a part: a part starting in it is plain text, as much as fits, its end taken as found. Searched
    # a row at a time, the end was the character after the row's end that fit, never measured: its line break, a part
    # one over the limit, as Telegram and Slack count the Markdown as written too.
    measure = len if platform == "len" else _ADAPTERS[platform][0].measure
    link = "[lbl](https://example.com/" + "p" * 60 + ")"
    rows = [f"|{link}|ttttt|", "|x|y|", f"|{'w' * 10}|{link}|", "|x|y|"]
    text = "|a|b|\n|-|-|\n" + "\n".join(rows) + "\n\nafter\n"
    over = {limit: [measure(p) for p in split_text(text, limit, measure) if measure(p) > limit]
            for limit in range(40, 130)}
    assert {limit: sizes for limit, sizes in over.items() if sizes} == {}
