"""split_text on styled links and addresses that no part can hold with their markers, with each platform's measure
and renderer: no part shows a ``**``, ``~~`` or bracket the whole text did not, none is only a style's markers and
the punctuation around what the next part holds, and nothing the reader sees is lost or doubled."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.discord import DiscordAdapter
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_TELEGRAM = TelegramAdapter("123:token")
_SLACK = SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")
_DISCORD = DiscordAdapter("token")
_PLATFORMS = {
    # measure, limit, and what the platform shows of a part: its text, Slack's and Discord's escapes undone
    "telegram": (_TELEGRAM.measure, _TELEGRAM.text_limit, lambda part: parse_html(telegram_html.render(part))[0]),
    "slack": (_SLACK.measure, _SLACK.text_limit,
              lambda part: re.sub(r"<(https?://[^>|]*)>", r"\1", slack_mrkdwn.render(part)).replace("\u200b", "")),
    "discord": (_DISCORD.measure, _DISCORD.text_limit, lambda part: _discord_shows(discord_markdown.render(part))),
}


def _discord_shows(rendered: str) -> str:
    """Discord's Markdown as a reader sees it: its own style markers gone, the ones escaped as typed."""
    return re.sub(r"\\([*_~])|[*_~]", lambda m: m.group(1) or "", rendered)


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@pytest.mark.parametrize("after", ["です", "を参照", "-based"])
def test_a_bold_link_written_out_keeps_its_bold_closed_before_glued_text(platform, after):
    # Written out as "**説明 https://… **です", its closer spaced off the address closed nothing (CommonMark's
    # flanking, CJK-friendly or not): every part showed "**"; glued, "です" would have been linked with the address.
    measure, limit, shows = _PLATFORMS[platform]
    url = "https://example.com/" + "p" * (limit + 50)
    parts = split_text(f"**[説明]({url})**{after}", limit, measure)
    shown = [shows(p) for p in parts]
    assert not any("**" in s or "~~" in s for s in shown), shown
    if platform == "telegram":
        # Bold from the label to the address's end, the glued text after it, spaced off so it is not linked.
        text = "".join(shown)
        assert text.replace(" ", "") == f"説明{url}{after}"
        assert text.endswith(f" {after}")
        entities = [e["type"] for p in parts for e in parse_html(telegram_html.render(p))[1]]
        assert entities.count("bold") == len(parts) - 1 or entities.count("bold") == len(parts)


def _telegram_shows(part: str) -> str:
    return parse_html(telegram_html.render(part))[0]


@pytest.mark.parametrize("marker", ["**", "~~"])
@pytest.mark.parametrize("limit", [36, 37, 38])
def test_a_styled_link_in_parentheses_is_not_cut_from_them(marker, limit):
    # "(" + link + ")" fit a part, but not with the style's markers: the part before the link read "**(**" ("(" alone),
    # the next ")" and the rest; now the part holds them without the markers (38: the next one started ")** more").
    text = f"{marker}([site](https://example.com/a/b/c)){marker} more text"
    assert split_text(text, limit) == ["([site](https://example.com/a/b/c))", "more text"]


@pytest.mark.parametrize("limit", [36, 37])
def test_a_bold_link_in_parentheses_shows_no_markdown(limit):
    # The part after "(" alone could not hold the link with its "**": cut as a long address is, it showed
    # "[site](https://example.com/a/b/c" as typed, and the next part ")" and the rest.
    parts = split_text("(**[site](https://example.com/a/b/c)**) more", limit)
    assert parts == ["([site](https://example.com/a/b/c))", "more"]
    assert [_telegram_shows(p) for p in parts] == ["(site)", "more"]


@pytest.mark.parametrize(("marker", "after"), [("**", "-based"), ("**", "を参照してください"), ("**_", "を参照してください"),
                                               ("__", "-based")])
def test_a_bold_link_a_part_holds_only_without_its_markers_is_not_cut(marker, after):
    # "[説明](https://e.co/pppppp)" fits 25, "**" around it not: it was cut as a long address ("[説明](https://e.co/ppp").
    parts = split_text(f"{marker}[説明](https://e.co/pppppp){marker[::-1]}{after}", 25)
    assert parts[0] == "[説明](https://e.co/pppppp)"
    assert "".join(_telegram_shows(p) for p in parts) == f"説明{after}"


def test_a_parenthesis_is_no_part_of_its_own_before_an_address_no_part_holds():
    parts = split_text("**(https://example.com/a/b/c)** more text", 8)
    assert all(re.search(r"\w", _telegram_shows(p)) for p in parts), parts


# --- property ---------------------------------------------------------------------------------------------------

_words = st.lists(st.sampled_from(["see", "前文", "これは", "a b", "説明します"]), max_size=3).map(" ".join)
_atom = st.one_of(
    st.tuples(st.sampled_from(["site", "説明", "the docs"]), st.integers(0, 250)).map(
        lambda t: f"[{t[0]}](https://e.co/{'p' * t[1]})"),
    st.integers(0, 250).map(lambda n: f"https://e.co/{'q' * n}"),
)
_construct = st.tuples(_words, st.sampled_from(["", " "]), st.sampled_from(["**", "~~", "*", "_", "***", ""]),
                       st.sampled_from(["", "(", "（", "「"]), _atom, st.sampled_from(["", ")", "）", "」", ")."]),
                       st.sampled_from(["", " more text", "です", "を参照してください。", "-based", ", then"]))


def _shown_markers(shown: str) -> Counter[str]:
    shown = re.sub(r"https?://\S+", "", shown)  # an address written out is shown as itself
    return Counter({m: shown.count(m) for m in ("**", "~~", "__", "](", "[", "]")})


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@settings(max_examples=120)
@given(construct=_construct, limit=st.integers(8, 200))
def test_no_part_of_a_styled_link_shows_its_markers_nor_loses_text(platform, construct, limit):
    words, space, marker, opening, atom, closing, after = construct
    assume(len(marker) <= limit // 4)  # else no part carries the markers: they show as typed, as documented
    if space == "" and words[-1:].isascii():
        space = " "  # "**" glued after a Latin word before "[" or "(" opens nothing: shown as typed in the whole
    if atom.startswith("https://") and not closing.startswith(("）", "」")) and after[:1] not in ("", " ", ","):
        after = " " + after  # a bare address reads on to a space (or CJK punctuation): the whole text links it all
    if marker == "_" and space == "" and words:
        marker = "*"  # "_" inside a word is text (``これは_x_``), shown as typed in the whole text too
    text = f"{words}{space}{marker}{opening}{atom}{closing}{marker[::-1]}{after}"
    measure, _, shows = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts)
    shown = [_telegram_shows(p) for p in parts]
    whole = _telegram_shows(text)
    assert _shown_markers("".join(shown)) - _shown_markers(whole) == Counter(), parts
    # A link no part holds is written out, its address after its label: shown once, nothing else added or lost.
    joined = re.sub(r"\s", "", "".join(shown))
    assert joined.count("https://") <= 1
    address_or_marker = r"https://e\.co/[pq]*|[*~_]"
    assert re.sub(address_or_marker, "", joined) == re.sub(address_or_marker, "", re.sub(r"\s", "", whole)), parts
    # What the construct reads as, without its markers, fits a part: none reads as punctuation alone.
    unstyled = f"{opening}{atom}{closing}"
    if measure(unstyled) <= limit // 2 and limit >= 16:
        assert all(re.search(r"\w", s) for s in shown), parts


# --- review of b6ebfc40 -------------------------------------------------------------------------------------------


def test_an_unstyled_part_does_not_show_the_closers_of_styles_opened_before_it():
    # The part from "))_**" on, given up on as plain text, held "))" and the image without the "__" around it, but
    # kept "_**", the closers of the bold italic the part before opened: shown as typed ("))_**site").
    p = "p" * 40
    text = f'**_"前文 [`c`](https://e.co/{"p" * 150} "title")))_**__![site](https://e.co/{p}) これは).__'
    parts = split_text(text, 73)
    shown = [_telegram_shows(part) for part in parts]
    assert not any("**" in s or "_" in s for s in shown), parts
    assert parts[-2:] == [f"))![site](https://e.co/{p})", "__これは).__"]


@pytest.mark.parametrize("text", ["~~**[the docs](https://e.co/ppp)))**~~", "**[the docs](https://e.co/ppp)))**"])
def test_the_punctuation_after_an_address_at_the_end_is_no_part_of_its_own(text):
    # "https://e.co/ppp))" fits 23 but not with "~~**" reopened around it: the address went alone, and the last part
    # was "~~**))**~~", only punctuation.
    parts = split_text(text, 23 if text.startswith("~") else 19)
    assert all(re.search(r"[^\W_]", _telegram_shows(p)) for p in parts), parts
    assert parts[-1] == "https://e.co/ppp))"


_before = st.tuples(st.sampled_from(["**", "**_", "~~", "*", "***"]), st.sampled_from(["前文", "see the", "a"]),
                    st.integers(20, 200), st.sampled_from([")", "))", ")))", ").", ""]))


@settings(max_examples=150)
@given(before=_before, construct=_construct, limit=st.integers(40, 120))
def test_a_styled_link_after_a_style_closed_past_a_long_address_shows_no_markers(before, construct, limit):
    # A style closing right after a long link (its address cut over parts), a styled link or address after it: the
    # part given up on as plain text from the closers on kept them (shown as typed), or left the punctuation after
    # the address at the text's end a part of its own.
    outer, label, n, glued = before
    _, _, marker, opening, atom, closing, after = construct
    assume(len(marker) <= limit // 4 and len(outer) <= limit // 4)
    space = " "  # glued to the closers before, they and the markers would read otherwise in the whole
    if atom.startswith("https://") and not closing.startswith(("）", "」")) and after[:1] not in ("", " ", ","):
        after = " " + after
    text = f"{outer}{label} [c](https://e.co/{'p' * n}){glued}{outer[::-1]}{space}{marker}{opening}{atom}{closing}"
    text += f"{marker[::-1]}{after}"
    parts = split_text(text, limit)
    shown = [_telegram_shows(p) for p in parts]
    assert _shown_markers("\n".join(shown)) - _shown_markers(_telegram_shows(text)) == Counter(), parts
    whole = _telegram_shows(text)
    for i, s in enumerate(shown):
        if re.fullmatch(r"[*_~]+[^\w\s]*|[^\w\s]*[*_~]+", s):
            # Only a character the whole shows as typed too (``_https://…）_です`` opens no italic), glued before an
            # address that fills a part: a part of its own rather than the address cut or the character lost.
            assert i + 1 < len(parts) and s + shown[i + 1] in whole, parts
            assert len(parts[i]) + len(parts[i + 1]) > limit, parts


def test_a_part_before_an_address_no_part_holds_is_not_given_up_on_past_closers():
    # "[c](…)" went alone without the bold around it; the next part, ")**(" before an address no part holds, was given
    # up on as plain text: it showed the bold's closer as typed, ")**(https://…".
    text = f"**前文 [c](https://e.co/{'p' * 20}))**(https://e.co/{'q' * 28}"
    parts = split_text(text, 40)
    assert not any("**" in _telegram_shows(p) for p in parts), parts
    assert "".join(_telegram_shows(p) for p in parts) == f"前文c)(https://e.co/{'q' * 28}"
