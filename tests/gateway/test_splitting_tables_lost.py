"""split_text on a table whose header row no part can hold, with each platform's own measure and limit: the table is
written as text (a backslash before its delimiter row), cut between words like any paragraph, and every word of it is
shown. A table is cut only between body rows, each part repeating the header rows: such a header was cut mid-word as
plain text, and the part after it read the rest of the header with the delimiter row as a table's header, its first
cell (over the rows' first column, a title no renderer shows) lost."""

from __future__ import annotations

import re

import pytest

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_ADAPTERS = {
    "telegram": (TelegramAdapter("123:token"), lambda part: parse_html(telegram_html.render(part))[0]),
    "discord": (DiscordAdapter("token"), discord_markdown.render),
    "slack": (SlackAdapter(bot_token="xoxb-1", app_token="xapp-1"), slack_mrkdwn.render),
}
_SENTENCE = "The operator reads every log line before the nightly restart window closes "
_WORD = re.compile(r"[A-Za-z0-9]+")


def _shown_words(text: str, platform: str) -> tuple[list[str], set[str]]:
    adapter, shown = _ADAPTERS[platform]
    parts = split_text(text, adapter.text_limit, adapter.measure)
    sent = [shown(part) for part in parts]
    assert [p[:80] for p, s in zip(parts, sent) if utf16_length(s) > adapter.text_limit] == []
    return parts, {w for s in sent for w in _WORD.findall(s)}


@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
@pytest.mark.parametrize("long_cell", [0, 1])
def test_a_header_row_longer_than_a_part_is_shown_whole_as_text(platform, long_cell):
    # Every word numbered, so a word cut in two, or one left out, is missing from what the parts show.
    words = " ".join(f"{w}{k}" for k, w in enumerate((_SENTENCE * 120).split()))  # about 13,000 characters
    cells = ["Key", "Value"]
    cells[long_cell] = words
    # Rows of some length: shown as a list per row (the table is too wide for a phone), no header cell over the
    # rows' first column is shown, and the text would fit a Discord message whole.
    rows = "\n".join(f"| row{r} | value{r} {'and more ' * 60}|" for r in range(5))
    text = f"Intro.\n\n| {cells[0]} | {cells[1]} |\n|---|---|\n{rows}\n\nOutro."
    parts, shown = _shown_words(text, platform)
    assert set(_WORD.findall(words)) - shown == set()
    assert {f"row{r}" for r in range(5)} | {f"value{r}" for r in range(5)} <= shown
    assert len(parts) <= 2 + len(text) // (_ADAPTERS[platform][0].text_limit // 2)


def test_a_header_row_that_fits_keeps_its_table():
    header = " | ".join(f"column {c}" for c in range(60))  # 700 characters: a part holds it and rows
    text = f"| {header} |\n|{'---|' * 60}\n" + "\n".join(f"| {' | '.join(['cell'] * 60)} |" for _ in range(40))
    parts = split_text(text, 2000, DiscordAdapter("token").measure)
    assert len(parts) > 1
    assert all(p.startswith(f"| {header} |\n|---|") for p in parts)


def test_a_padded_table_whose_header_a_part_holds_as_a_table_keeps_it():
    # From review: columns padded as a formatter aligns them, header and delimiter rows of 1,031 characters each:
    # over Discord's 2,000 as text, about 200 as the table a part repeats. Weighed as text, the table was written as
    # text (``\|:---…``), one line a part, its pipes shown: 22 parts where 2 hold it as a table.
    width, columns = 100, 10

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(width) for c in cells) + " |"

    delimiter = "|" + "|".join(":" + "-" * width + ":" for _ in range(columns)) + "|"
    rows = [line([f"r{r}c{c}" for c in range(columns)]) for r in range(20)]
    text = "\n".join(["Intro.", "", line([f"column{c}" for c in range(columns)]), delimiter, *rows, "", "Outro."])
    parts, shown = _shown_words(text, "discord")
    assert [p[:40] for p in parts if "\\|" in p] == []
    assert len(parts) <= 3
    assert {f"r{r}c{c}" for r in range(20) for c in range(columns)} <= shown
