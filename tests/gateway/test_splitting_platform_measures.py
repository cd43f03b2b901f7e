"""split_text with each platform's own measure, on prose of many scripts and emoji: every part fits the limit as
the platform counts it, no part holds a piece of a character a reader sees, and the parts give back the text."""

from __future__ import annotations

from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_CLUSTERS = ["a", "Zq", "é", "e\u0301\u0302", "中文", "한", "\u1100\u1161\u11a8", "\u0915\u094d\u0937", "😀", "👍🏽",
             "👨\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "🇫🇷", "🇯🇵🇰🇷", "\U00020000", "ß"]
_word = st.lists(st.sampled_from(_CLUSTERS), min_size=1, max_size=30).map("".join)
_prose = st.lists(st.tuples(_word, st.sampled_from([" ", "\n", "\n\n", ""])), min_size=1, max_size=30).map(
    lambda ws: "".join(w + s for w, s in ws))


def _telegram_counts(part: str) -> int:
    """UTF-16 units of what Telegram shows of the part (the fake parses the HTML as Telegram does)."""
    return utf16_length(parse_html(telegram_html.render(part))[0])


_PLATFORMS = {
    "telegram": (TelegramAdapter("123:token").measure, _telegram_counts),
    # What is sent is the rendered text (trailing blanks trimmed, say): the platforms count its code points.
    "discord": (DiscordAdapter("token").measure, lambda part: len(discord_markdown.render(part))),
    "slack": (SlackAdapter(bot_token="xoxb-1", app_token="xapp-1").measure,
              lambda part: len(slack_mrkdwn.render(part))),
}


def _clusters(text: str) -> Counter[str]:
    return Counter(c for c in regex.findall(r"\X", text) if not c.isspace())


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@settings(max_examples=60, deadline=None)
@given(text=_prose, limit=st.integers(min_value=24, max_value=200))
def test_parts_fit_as_the_platform_counts_and_keep_every_character_whole(platform, text, limit):
    measure, platform_counts = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert all(platform_counts(p) <= limit for p in parts)
    assert sum(map(_clusters, parts), Counter()) == _clusters(text)
    assert "".join("".join(parts).split()) == "".join(text.split())
