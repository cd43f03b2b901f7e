"""split_text cutting within a line: the rest of the line is text in the next part, whatever it starts with, and a
paragraph written with CRLF line ends keeps its styles and links across a cut; and, on Markdown of every kind, every
part fits as the platform counts it once rendered, and shows what the text shows."""

from __future__ import annotations

import re

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.splitting import safe_measure, split_text
from platforms.base import utf16_length
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_TELEGRAM = safe_measure(TelegramAdapter("123:token"))


def _shown(part: str) -> tuple[str, list[dict]]:
    """What Telegram shows of the part, and its entities (the fake parses the HTML as Telegram does)."""
    return parse_html(telegram_html.render(part))


def _squeezed(text: str) -> str:
    return re.sub(r"\s", "", text)


@pytest.mark.parametrize("rest", ["> 5 then", "- b then", "# 3 then", "+ c then", "* d then", "---", "* * *",
                                  "```py then", "~~~ then", "[a]: x"])
def test_a_part_starting_within_a_line_shows_the_rest_of_it_as_written(rest):
    # Cut at the space before it, "x > 5" left a part starting "> 5": a quote, its ">" gone; "a - b" a bullet
    # ("•"), "C # 3" a heading, "x ---" a rule, "```py" a code block of the lines after it (their "**" shown),
    # "[a]: x" a link definition (nothing at all).
    text = "word " * 8 + rest + "\nand **more** words after it"
    whole = _squeezed(_shown(text)[0])
    for limit in range(20, 60):
        parts = split_text(text, limit, _TELEGRAM)
        shown = [_shown(p) for p in parts]
        assert _squeezed("".join(s for s, _ in shown)) == whole, (limit, parts)
        assert not any(e["type"] in ("blockquote", "pre") for _, entities in shown for e in entities), (limit, parts)


def test_a_paragraph_with_crlf_line_ends_keeps_its_styles_and_links_across_a_cut():
    # A line's trailing spaces before "\r\n" (a hard line break) made its paragraph unreadable to the splitter:
    # a bold run cut in two showed its "**" in both parts, and a link could be cut inside its address.
    text = ("Some opening words here  \r\nthen **a bold run of words that goes on across the cut** and "
            "[a link to the docs](https://example.com/docs) at the end of it.\r\n")
    for limit in range(60, 110):
        parts = split_text(text, limit, _TELEGRAM)
        shown = [_shown(p) for p in parts]
        assert not any("*" in s or "](" in s for s, _ in shown), (limit, parts)
        links = [e["url"] for _, entities in shown for e in entities if e["type"] == "text_link"]
        assert set(links) == {"https://example.com/docs"}, (limit, parts)


# --- properties: Markdown of every kind, the platforms' own measures -----------------------------------------

_CLUSTERS = ["a", "word", "é", "e\u0301", "中文", "한", "\u1100\u1161\u11a8", "😀", "👍🏽",
             "👨\u200d👩\u200d👧\u200d👦", "🇫🇷", "&", "<", ">", "&amp;", "&lt;", "\\*",
             " - ", " > ", " # ", " ---"]
# No "\r\n": CRLF in a styled quote can still show a style's markers at a cut (left open, noted); the test above
# holds what CRLF was fixed for.
_word = st.lists(st.sampled_from(_CLUSTERS), min_size=1, max_size=10).map("".join)
_inline = st.one_of(_word, _word.map("**{}**".format), _word.map("_{}_".format), _word.map("`{}`".format),
                    _word.map("~~{}~~".format), _word.map("[{}](https://ex.com/a)".format),
                    st.just("https://example.com/a_b"))
_line = st.lists(_inline, min_size=1, max_size=8).map(" ".join)
_code = st.lists(st.text(st.sampled_from("ab <&>😀 \t"), max_size=20), max_size=6).map(
    lambda lines: "```py\n" + "".join(f"{line}\n" for line in lines) + "```")
_block = st.one_of(
    st.lists(_line, min_size=1, max_size=4).map("\n".join),
    _code,
    st.lists(_line, min_size=1, max_size=4).map(lambda lines: "\n".join(f"- {line}" for line in lines)),
    st.lists(_line, min_size=1, max_size=4).map(lambda lines: "\n".join(f"> {line}" for line in lines)),
    _line.map("## {}".format),
)
_doc = st.lists(_block, min_size=1, max_size=6).map("\n\n".join)

_PLATFORMS = {
    "telegram": (_TELEGRAM, lambda part: utf16_length(_shown(part)[0])),
    "discord": (safe_measure(DiscordAdapter("token")), lambda part: len(discord_markdown.render(part))),
    "slack": (safe_measure(SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")),
              lambda part: len(slack_mrkdwn.render(part))),
}


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=_doc, limit=st.integers(min_value=90, max_value=400), platform=st.sampled_from(sorted(_PLATFORMS)))
def test_every_part_fits_as_rendered_keeps_characters_whole_and_shows_the_text(text, limit, platform):
    # The limit is 90 or more: a link's address then takes less than a quarter of it, and is never written out.
    measure, platform_counts = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert all(platform_counts(p) <= limit for p in parts)
    clusters = set(regex.findall(r"\X", text))
    assert all(c in clusters or c.isspace() or len(c) == 1 for p in parts for c in regex.findall(r"\X", p))
    if platform == "telegram":  # what it shows is known exactly (the fake parses the HTML); the others send markup
        assert _squeezed("".join(_shown(p)[0] for p in parts)) == _squeezed(_shown(text)[0])
