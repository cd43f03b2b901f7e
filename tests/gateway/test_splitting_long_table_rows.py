"""split_text on a table row longer than a message part (a cell holding a long paragraph), with each platform's own
measure and limit: the row is cut after a pipe between cells or between words of a cell, and the next part goes on
with a row of its own, under the row's first cell, the rest in its own column. It was cut anywhere, mid-word, and
the next part read the rest as a new row: its first cell, shown in bold on every platform (a table that wide is a
list per row, its first cell the row's bold title)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.gateway.test_splitting_shown_markers import _PLATFORMS as _SHOWN_ON
from tests.gateway.test_splitting_shown_markers import _linked, _split, _styled, _word

_ADAPTERS = {
    "telegram": (TelegramAdapter("123:token"), lambda part: utf16_length(parse_html(telegram_html.render(part))[0])),
    "discord": (DiscordAdapter("token"), lambda part: len(discord_markdown.render(part))),
    "slack": (SlackAdapter(bot_token="xoxb-1", app_token="xapp-1"), lambda part: len(slack_mrkdwn.render(part))),
}
_SENTENCE = "The operator reads every log line before the nightly restart window closes. "


def _parts(text: str, platform: str) -> list[str]:
    adapter, sent = _ADAPTERS[platform]
    parts = split_text(text, adapter.text_limit, adapter.measure)
    assert [sent(p) for p in parts if sent(p) > adapter.text_limit] == []
    return parts


def _shown(part: str) -> tuple[str, list[str]]:
    """What Telegram shows of ``part`` and its bold stretches: every platform renders the same parse."""
    text, entities = parse_html(telegram_html.render(part))
    units = text.encode("utf-16-le")
    bold = [units[2 * e["offset"]:2 * (e["offset"] + e["length"])].decode("utf-16-le")
            for e in entities if e["type"] == "bold"]
    return text, bold


def _column(parts: list[str], header: str, row: str | None = "B") -> str:
    """The text shown under ``header`` in ``row`` across the parts (or in any row: a list per row, its title line,
    then an item ``header: value`` per cell, rows a blank line apart), the pieces of a cut cell joined by a space."""
    blocks = [b.split("\n") for p in parts for b in _shown(p)[0].split("\n\n")]
    return " ".join(line.removeprefix(f"• {header}: ") for lines in blocks if row is None or lines[0] == row
                    for line in lines if line.startswith(f"• {header}: "))


@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
def test_a_row_longer_than_a_part_goes_on_under_its_first_cell_in_its_own_column(platform):
    notes = (_SENTENCE * 120).strip()  # about 9,000 characters: two or more parts on every platform
    text = ("Here is the comparison.\n\n| Option | Pros | Notes |\n|---|---|---|\n| A | fast | short |\n"
            f"| B | robust | {notes} |\n| C | cheap | fine |\n\nThat is all.")
    parts = _parts(text, platform)
    # No piece of the notes is a row's bold title; they read whole, word for word, in order, under B's title.
    assert {b for p in parts for b in _shown(p)[1]} <= {"A", "B", "C"}
    assert _column(parts, "Notes") == notes
    in_row = [p for p in parts if "| B |" in p]
    assert len(in_row) >= 3
    assert all(p.startswith("| Option | Pros | Notes |\n|---|---|---|\n| B |  | ") for p in in_row[1:])


def test_a_row_is_cut_after_a_pipe_between_cells_where_one_ends_late_in_the_part():
    first, second = (_SENTENCE * 20).strip(), ("Another column of words, said slowly. " * 40).strip()
    text = f"| Key | Notes | More |\n|---|---|---|\n| B | {first} | {second} |\n| C | x | y |\n"
    parts = _parts(text, "discord")
    assert parts[1].startswith("| Key | Notes | More |\n|---|---|---|\n| B |  | Another column")
    assert _column(parts, "Notes") == first
    assert _column(parts, "More") == second
    assert {b for p in parts for b in _shown(p)[1]} == {"B", "C"}


def test_a_style_open_at_a_cut_in_a_cell_is_closed_and_reopened_and_a_link_kept_whole():
    bold = (_SENTENCE * 20).strip()
    cell = f"{_SENTENCE * 5}**{bold}** see [the runbook](https://e.co/runbook) {_SENTENCE * 10}".strip()
    parts = _parts(f"| Key | Notes |\n|---|---|\n| B | {cell} |\n", "discord")
    assert len(parts) >= 2
    assert all(p.startswith("| Key | Notes |\n|---|---|\n| B | ") for p in parts)
    shown = [_shown(p) for p in parts]
    assert " ".join(b for _, bolds in shown for b in bolds if b != "B") == bold
    assert not any("**" in text or "](" in text for text, _ in shown)
    links = [e["url"] for p in parts for e in parse_html(telegram_html.render(p))[1] if e["type"] == "text_link"]
    assert links == ["https://e.co/runbook"]


def test_a_long_row_of_a_quoted_table_goes_on_in_the_quote():
    notes = (_SENTENCE * 40).strip()
    parts = _parts(f"Intro\n\n> | Key | Notes |\n> |---|---|\n> | B | {notes} |\n> | C | short |\n", "discord")
    assert len(parts) >= 3
    assert all(p.startswith("> | Key | Notes |\n> |---|---|\n> | B | ") for p in parts[2:])
    assert _column(parts, "Notes") == notes


def test_a_long_first_cell_is_not_repeated():
    # Repeated, a first cell of a quarter of the limit or more would take that much of every part the row goes on in.
    label, notes = ("Label words " * 60).strip(), (_SENTENCE * 40).strip()
    parts = _parts(f"| Key | Notes |\n|---|---|\n| {label} | {notes} |\n", "discord")
    assert all(p.startswith("| Key | Notes |\n|---|---|\n|  | ") for p in parts[1:])
    assert _column(parts, "Notes", row=None) == notes


_long_cell = st.lists(st.one_of(_word, _styled, _linked), min_size=1, max_size=60).map(" ".join)


@pytest.mark.parametrize("platform", sorted(_SHOWN_ON))
@settings(max_examples=40, deadline=None)
@given(quote=st.sampled_from(["", "> "]), rows=st.lists(st.tuples(_word, _long_cell, _long_cell), min_size=1,
                                                          max_size=3), limit=st.integers(min_value=80, max_value=300))
def test_long_rows_cut_show_no_markdown_and_lose_nothing(platform, quote, rows, limit):
    lines = ["| k | v | w |", "|---|--:|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows)]
    table = "".join(f"{quote}{line}\n" for line in lines)
    assume(_SHOWN_ON[platform][0](f"{quote}{lines[0]}\n{quote}{lines[1]}\n{quote}| {'k' * 20} | v |") <= limit // 2)
    _split(f"intro\n\n{table}\nend", limit, platform)
