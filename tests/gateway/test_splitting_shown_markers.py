"""split_text on the constructs a cut could leave as typed Markdown (links with dense labels, reference links,
images, tables with links, in quotes too, targets holding a ")"), with each platform's measure: no part shows a
marker the whole text did not, nothing the reader sees is lost, and every part fits as the platform counts it sent.

Whether a part shows its Markdown is read off Telegram's rendering: every platform's renderer walks the same
markdown-it parse (`platforms.formatting.markdown`), so Markdown read as text there is text on each of them."""

from __future__ import annotations

import re
from collections import Counter

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

_PLATFORMS = {
    # measure, and the length of what is sent as the platform counts it
    "telegram": (TelegramAdapter("123:token").measure,
                 lambda part: utf16_length(parse_html(telegram_html.render(part))[0])),
    "discord": (DiscordAdapter("token").measure, lambda part: len(discord_markdown.render(part))),
    "slack": (SlackAdapter(bot_token="xoxb-1", app_token="xapp-1").measure,
              lambda part: len(slack_mrkdwn.render(part))),
    "web": (len, len),
}
_MARKERS = "[]*_`~|"
_URL = re.compile(r"https?://\S+")


def _shown(markdown: str) -> tuple[str, str]:
    """What Telegram shows of ``markdown``: outside code, and all of it."""
    text, entities = parse_html(telegram_html.render(markdown))
    code = [(e["offset"], e["offset"] + e["length"]) for e in entities if e["type"] in ("code", "pre")]
    outside, offset = [], 0
    for ch in text:
        if not any(a <= offset < b for a, b in code):
            outside.append(ch)
        offset += utf16_length(ch)
    return "".join(outside), text


def _markers(shown: str) -> Counter[str]:
    shown = _URL.sub("", shown)  # an address written out is shown as itself
    return Counter({"](": shown.count("]("), **Counter(c for c in shown if c in _MARKERS)})


def _letters(shown: str) -> str:
    # Table rows are laid out again in each part (their columns as wide as the part's cells): no rules, pipes, spaces;
    # a table too wide for a phone is a list per row, in the whole text or in a part alone: no bullets and headers.
    return re.sub(r"[\s|+-]", "", re.sub(r"^• [^:\n]*: ", "", shown, flags=re.MULTILINE))


def _is_subsequence(small: str, big: str) -> bool:
    rest = iter(big)
    return all(c in rest for c in small)


def _split(text: str, limit: int, platform: str) -> list[str]:
    """``text``'s parts for ``platform``, checked: each fits sent, none shows a marker more, none loses a letter."""
    measure, sent = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert [sent(p) for p in parts if sent(p) > limit] == []
    shown = [_shown(p) for p in parts]
    whole = _shown(text)
    assert _markers("".join(outside for outside, _ in shown)) - _markers(whole[0]) == Counter(), parts
    assert _is_subsequence(_letters(whole[1]), _letters("".join(text for _, text in shown))), parts
    return parts


# --- the cuts, one by one ---------------------------------------------------------------------------------------


def test_a_reference_link_is_never_cut_in_its_label():
    # Markdown-it read each stretch without the definitions at the text's end: a reference link was no link to the
    # splitter, and a cut at a space in its label showed "see [the long" and "named docs][d1]" as typed.
    text = "intro " * 10 + "see [the long named docs][d1] for more. " * 3 + "\n\n[d1]: https://example.com/docs"
    for limit in (70, 76, 82, 88):  # room for the definition, carried into each part
        parts = _split(text, limit, "web")
        links = [e["url"] for p in parts for e in parse_html(telegram_html.render(p))[1] if e["type"] == "text_link"]
        assert links == ["https://example.com/docs"] * 3


def test_a_reference_link_a_part_starts_with_is_kept_whole_when_it_fits_with_its_definition():
    # Drawn by the property below: the first guess held a definition cut short ("[r1]: https:/"), which measured
    # short; cut earlier by what the part was over, the part ended inside the link it starts with ("...*][r1").
    text = " [**00000** *00000000*][r1]  [0][r1]  [0][r1] 0 0 [00000000][r1] \n\n[r1]: https://e.co/ref"
    parts = _split(text, 80, "discord")
    assert parts[0] == "[**00000** *00000000*][r1]\n\n[R1]: <https://e.co/ref>"


def test_a_table_in_a_quote_repeats_its_header_rows_with_their_quote_markers():
    # Only a top-level table was known: a part starting inside a quoted one got its rows alone, shown as typed.
    rows = "".join(f"> | r{i} | [link {i}](https://example.com/{i}) |\n" for i in range(12))
    parts = _split("Intro\n\n> | k | v |\n> |---|---|\n" + rows, 200, "telegram")
    assert len(parts) > 2
    assert all(p.startswith("> | k | v |\n> |---|---|\n> | r") for p in parts[1:])
    assert [line for p in parts for line in p.splitlines() if line.startswith("> | r")] == rows.splitlines()


def test_an_image_longer_than_a_part_shows_no_markdown():
    # A chart's address (QuickChart's carry the whole chart) longer than Discord's limit: the image was cut as
    # text, "![Sales by month\](\(https://quickchart.io/..." shown; now it is written out as its alt text and address.
    url = "https://quickchart.io/chart?c=" + "%7B%22type%22%3A%22bar%22" * 110
    parts = _split(f"Here is the chart:\n\n![Sales by month]({url})\n\nAs you can see, sales grew.", 2000, "discord")
    assert "![" not in "".join(parts)


def test_an_image_with_alt_text_longer_than_a_part_is_cut_into_images_of_the_same_picture():
    alt = "Sales by month, " * 200
    parts = _split(f"The chart: ![{alt}](https://e.co/chart.png) done", 2000, "discord")
    rendered = [discord_markdown.render(p) for p in parts]
    assert [r.count("](https://e.co/chart.png)") for r in rendered] == [0, 1, 1]


def test_an_image_that_fits_a_part_whole_is_not_cut_where_its_beginning_would_not():
    # Its alt text's styles show nothing: whole it measured 68 on Discord, its first 78 characters as text 80 (their
    # "**" shown, "](" escaped), so the search for the part's end stopped inside it, and cut it.
    image = "![0 0 0000 00000 **00000** **00000** 0000000 **00000000**](https://e.co/pppppppp)"
    assert _split(f"00000 000000 {image} ", 80, "discord") == ["00000 000000", image]


@pytest.mark.parametrize("target", ["<https://e.co/a)b{}>", "https://e.co/a\\)b{}"])
def test_a_long_target_whose_first_parenthesis_does_not_end_it_is_written_out(target):
    # Only a target with no ")" in its first quarter of the limit, or a "(" before one, was looked at: these were
    # cut as text, "](<https://e.co/a)b..." shown.
    parts = _split("see [" + "label " * 9 + "](" + target.format("p" * 40) + ") end", 80, "telegram")
    assert parse_html(telegram_html.render(parts[-1]))[0] == "https://e.co/a)b" + "p" * 40 + " end"


# --- properties -------------------------------------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from("abcxyz019é中😀"), min_size=1, max_size=8)
_styled = st.tuples(_word, st.sampled_from(["", "", "**", "*", "_", "~~", "`"])).map(lambda w: f"{w[1]}{w[0]}{w[1]}")
_label = st.lists(_styled, min_size=1, max_size=30).map(" ".join)
_filler = st.lists(_word, max_size=40).map(" ".join)
_path = st.integers(0, 300).map(lambda n: "p" * n)
_linked = st.tuples(_word, st.integers(0, 30)).map(lambda t: f"[{t[0]}](https://e.co/{'q' * t[1]})")
_cell = st.one_of(_word, _styled, _linked)


def _table(quote: str, rows: list[tuple[str, str]]) -> str:
    lines = ["| k | v |", "|---|--:|", *(f"| {a} | {b} |" for a, b in rows)]
    return "".join(f"{quote}{line}\n" for line in lines)


_shapes = st.one_of(
    st.tuples(_filler, _label, _path, _filler).map(lambda t: f"{t[0]} [{t[1]}](https://e.co/{t[2]}) {t[3]}"),
    st.tuples(_filler, _label, _path, _filler).map(lambda t: f"{t[0]} ![{t[1]}](https://e.co/{t[2]}) {t[3]}"),
    st.tuples(_filler, _label, _path, _filler).map(lambda t: f"{t[0]} [{t[1]}](<https://e.co/a)b{t[2]}>) {t[3]}"),
    st.lists(st.tuples(_filler, _label), min_size=1, max_size=4).map(
        lambda ts: "".join(f"{f} [{lab}][r1] " for f, lab in ts) + "\n\n[r1]: https://e.co/ref"),
    st.tuples(_filler, st.sampled_from(["", "> "]), st.lists(st.tuples(_cell, _cell), min_size=1, max_size=20),
              _filler).map(lambda t: f"{t[0]}\n\n{_table(t[1], t[2])}\n{t[3]}"),
)


def _within_reach(text: str, limit: int, platform: str) -> bool:
    """False for what a part still cannot hold as written: a reference link longer than a part with its definition
    (or than the definitions' room), a table row longer than a part with its header rows."""
    measure = _PLATFORMS[platform][0]
    references = re.findall(r"\[([^\]]*)\]\[r1\]", text)
    if any(measure(f"[{label}](https://e.co/ref)") > limit // 2 for label in references):
        return False
    lines = text.split("\n")
    head = next((i for i, line in enumerate(lines) if line.lstrip("> ").startswith("| k |")), None)
    return head is None or all(measure("\n".join([*lines[head:head + 2], row])) <= limit - 8
                               for row in lines[head + 2:] if "|" in row)


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@settings(max_examples=150, deadline=None)
@given(text=_shapes, limit=st.integers(min_value=80, max_value=300))
def test_no_part_shows_markdown_the_text_does_not(platform, text, limit):
    assume(_within_reach(text, limit, platform))
    _split(text, limit, platform)
