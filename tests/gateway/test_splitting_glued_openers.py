"""split_text where a space before punctuation glued to an address (``see (https://…``, ``see ))**https://…``) would
end a part, and the next part holds the address only without that punctuation: the part takes the punctuation
along, so no part reads ``(`` alone; with each platform's measure, as a reader sees the parts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_TELEGRAM = TelegramAdapter("123:token")
_SLACK = SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")
_DISCORD = DiscordAdapter("token")
_MEASURES = {"web": len, "telegram": _TELEGRAM.measure, "slack": _SLACK.measure, "discord": _DISCORD.measure}


def _telegram_shows(part: str) -> str:
    return parse_html(telegram_html.render(part))[0]


def test_a_parenthesis_goes_with_the_word_before_an_address_that_fits_a_part_only_alone():
    # "https://example.com/aaaaa" is the limit: the part before ended at the space, and the next read "(" alone.
    parts = split_text("see (https://example.com/aaaaa) more", 25)
    assert parts == ["see (", "https://example.com/aaaaa", ") more"]


def test_punctuation_and_markers_shown_as_typed_go_with_the_word_before_the_address():
    # The "**" open no style (nothing closes them): a part "))\\*\\*", shown "))**", punctuation alone.
    parts = split_text("see ))**https://e.co/pppp more", 17)
    assert parts == ["see ))\\*\\*", "https://e.co/pppp", "more"]
    assert [_telegram_shows(p) for p in parts] == ["see ))**", "https://e.co/pppp", "more"]


@pytest.mark.parametrize("marker", ["**", "_"])
def test_a_styled_parenthesis_goes_with_the_word_before_the_address(marker):
    # The part read "**(**", a bold "(" alone; the address goes without the bold around it (`_unstyled`).
    parts = split_text(f"see {marker}(https://example.com/aaaaa){marker} more", 25)
    assert parts == [f"see {marker}({marker}", "https://example.com/aaaaa", f"{marker}){marker} more"]
    assert [_telegram_shows(p) for p in parts] == ["see (", "https://example.com/aaaaa", ") more"]


# --- property ---------------------------------------------------------------------------------------------------

_construct = st.tuples(st.sampled_from(["see", "a b", "前文", "see the"]), st.sampled_from(["", "**", "_"]),
                       st.sampled_from(["(", "((", "))**", '"(', "（"]), st.integers(0, 40),
                       st.sampled_from(["", ")", "))", ") more", "). more"]))


@pytest.mark.parametrize("platform", sorted(_MEASURES))
@settings(max_examples=150, deadline=None)
@given(construct=_construct, slack=st.integers(-3, 3))
def test_no_part_is_punctuation_alone_before_an_address_a_part_holds_alone(platform, construct, slack):
    words, marker, opening, n, closing = construct
    measure = _MEASURES[platform]
    address = f"https://example.com/{'a' * n}"
    text = f"{words} {marker}{opening}{address}{closing if not marker else marker + closing}"
    limit = max(measure(address) + slack, 8)
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts), parts
    # Only what follows the address (its ")", the text's end) may go alone: the part before it cannot hold it.
    address_at = next((i for i, p in enumerate(parts) if "https://" in p), len(parts))
    before = [_telegram_shows(p) for p in parts[:address_at]]
    assert all(re.search(r"\w", s) for s in before), parts


# --- review ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["slack", "discord"])
def test_an_address_in_a_style_opened_before_the_punctuation_goes_with_it_where_it_is_held_unstyled(platform):
    # The "(" went with "see", and the address, bold again, left the "**)" glued after it alone: a part ")". The
    # next part holds "(", the address and ")" without the bold (`_unstyled`): two parts, none of punctuation alone.
    parts = split_text("**see (https://example.com/aaaaaaaaaaaaaaaaaaaa**)", 44, _MEASURES[platform])
    assert parts == ["**see**", "(https://example.com/aaaaaaaaaaaaaaaaaaaa)"]
