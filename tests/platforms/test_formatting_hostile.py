"""Markdown models write that the renderers mishandled: a link in a link's label (a badge,
``[![build](badge.svg)](ci)``, or an autolink) and a line break in one, which no platform's link
markup holds; a bare URL in CJK text, which puts no space after it; a long line of colons, which
took minutes. Each platform gets markup it reads as meant, saying what the model wrote, at once."""

from __future__ import annotations

import time

import pytest

from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html

BADGE = "[![Build](https://img.shields.io/b.svg)](https://github.com/o/r)"


@pytest.mark.parametrize(("render", "expected"), [
    # Slack's link ends at the first ">": the inner <https://img…|Build> broke it, leaving a stray ">".
    (slack_mrkdwn.render, "<https://github.com/o/r|Build>"),
    # Discord read [[Build](img)](url) as a link to the image, then "](https://github.com/o/r)" as text.
    (discord_markdown.render, "[Build](https://github.com/o/r)"),
    (telegram_html.render, '<a href="https://github.com/o/r">Build</a>'),
])
def test_a_badge_is_one_link_labelled_with_its_alt_text(render, expected):
    assert render(BADGE) == expected


def test_a_badge_on_telegram_is_one_link_to_where_the_badge_points():
    text, entities = parse_html(telegram_html.render(f"CI: {BADGE} and ![logo](https://x.org/l.png)"))
    assert text == "CI: Build and logo"
    assert [(e["offset"], e["length"], e["url"]) for e in entities] == [
        (4, 5, "https://github.com/o/r"), (14, 4, "https://x.org/l.png")]


@pytest.mark.parametrize(("render", "expected"), [
    (slack_mrkdwn.render, "<https://x.org|mirror of https://y.org here>"),
    (discord_markdown.render, "mirror of https://y.org here (<https://x.org>)"),
    (telegram_html.render, '<a href="https://x.org">mirror of https://y.org here</a>'),
])
def test_an_autolink_in_a_label_is_its_address_as_text(render, expected):
    assert render("[mirror of <https://y.org> here](https://x.org)") == expected


@pytest.mark.parametrize(("render", "expected"), [
    # The quote's "> " went into the label: Slack showed the link's markup, not a link.
    (slack_mrkdwn.render, "> see <https://x.org|the long label> now\n> next"),
    (discord_markdown.render, "> see [the long label](https://x.org) now\n> next"),
])
def test_a_line_break_in_a_label_is_a_space_in_a_quote(render, expected):
    assert render("> see [the long\nlabel](https://x.org) now\nnext") == expected


@pytest.mark.parametrize(("render", "expected"), [
    (slack_mrkdwn.render, "• <https://x.org|one two>\n• three"),
    (discord_markdown.render, "- [one two](https://x.org)\n- three"),
])
def test_a_line_break_in_a_label_is_a_space_in_a_list_item(render, expected):
    assert render("- [one\ntwo](https://x.org)\n- three") == expected


CJK = "请访问https://example.com/a_b，然后点击**登录**。"


@pytest.mark.parametrize(("render", "expected"), [
    # The address ran on to the next space, here none: Slack linked the whole sentence, asterisks and all.
    (slack_mrkdwn.render, "请访问<https://example.com/a_b>，然后点击\u200b*登录*。"),
    # Discord too, by its own rule for bare addresses: between <> it links the address alone.
    (discord_markdown.render, "请访问<https://example.com/a_b>，然后点击**登录**。"),
    # Telegram as well (TDLib's find_urls takes in "，" and what follows): a link to the address alone.
    (telegram_html.render, '请访问<a href="https://example.com/a_b">https://example.com/a_b</a>，然后点击<b>登录</b>。'),
])
def test_cjk_punctuation_ends_a_bare_url(render, expected):
    assert render(CJK) == expected


def test_full_width_letters_stay_in_a_bare_url():
    assert slack_mrkdwn.render("見てhttps://x.org/東京ｆｕｌｌ１（とうきょう）") == "見て<https://x.org/東京ｆｕｌｌ１>（とうきょう）"


@pytest.mark.parametrize("render", [telegram_html.render, slack_mrkdwn.render, discord_markdown.render],
                         ids=["telegram", "slack", "discord"])
def test_a_long_line_of_colons_renders_in_linear_time(render):
    # A minified JSON or a log line, 60 KB of text between two tokens: every colon searched all the text
    # before it for an "https" scheme, and this took about half a minute (two for 100 KB).
    line = "a:" * 30_000
    started = time.perf_counter()
    assert render(line) == line
    assert time.perf_counter() - started < 5
