"""Rendering never raises, whatever the agent wrote: styles nested a thousand deep, quotes and lists
deeper than markdown-it nests them, and a walk that fails all the same (plain text then)."""

from __future__ import annotations

import logging

import pytest

from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.formatting.markdown import Context, Renderer

RENDERERS = [telegram_html.render, slack_mrkdwn.render, discord_markdown.render]
DEEP = {
    "bold": "*" * 2000 + "a" + "*" * 2000,
    "underscores": "_" * 2000 + "a" + "_" * 2000,
    "italic in italic": "*a " * 3000 + "b" + " a*" * 3000,
    "quotes": "> " * 5000 + "a",
    "list items": "- " * 5000 + "a",
    "brackets": "[" * 5000 + "a",
}


@pytest.mark.parametrize("render", RENDERERS, ids=["telegram", "slack", "discord"])
@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_deeply_nested_markdown_renders(render, text):
    assert "a" in render(text)


@pytest.mark.parametrize(("render", "expected"), [
    (telegram_html.render, "<b>a</b>"), (slack_mrkdwn.render, "*a*"), (discord_markdown.render, "**a**")])
def test_a_thousand_bolds_within_each_other_are_one(render, expected):
    assert render("*" * 2000 + "a" + "*" * 2000) == expected


@pytest.mark.parametrize(("render", "expected"), [
    (telegram_html.render, "<b>a b c</b> <i>x <b>y</b> x</i>"),
    (slack_mrkdwn.render, "*a b c* _x *y* x_"),
    (discord_markdown.render, "**a b c** *x **y** x*"),
])
def test_a_style_within_its_own_kind_is_left_plain_and_other_kinds_nest(render, expected):
    assert render("**a **b** c** *x **y** x*") == expected


class _Broken(Renderer):
    def style(self, kind: str, inner: str, ctx: Context) -> str:
        raise IndexError("a bug in a walk")


def test_a_walk_that_fails_renders_the_text_as_written_and_logs_without_it(caplog):
    caplog.set_level(logging.WARNING, logger="platforms.formatting")
    text = "a **secret** word"
    assert _Broken().render(text) == text
    [record] = caplog.records
    assert "IndexError" in record.getMessage() and "secret" not in record.getMessage()


class _BrokenTelegram(telegram_html.TelegramHtml):
    style = _Broken.style


def test_telegram_falls_back_to_escaped_text():
    assert _BrokenTelegram().render("**a** <b> & c") == "**a** &lt;b&gt; &amp; c"
