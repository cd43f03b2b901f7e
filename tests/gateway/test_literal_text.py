"""`gateway.excerpt.literal` and `typed`: what a user wrote, named or quoted back by the gateway (a command
naming back a word, the late note quoting a message), shows as written on Telegram, Slack and Discord, not
read as Markdown; a bare web address in it still links where it says (`platforms.formatting.bare_urls.spans`),
and ends before a closing curly quote."""

from __future__ import annotations

import re

import pytest

from gateway.excerpt import literal, typed
from gateway.late_notes import picked_up_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, markdown, slack_mrkdwn, telegram_html

HOSTILE = ["[Verify](https://evil.example)", "_x_", "a*b*c", "&amp;", "x`y`z", "~~gone~~", "<https://e.example>",
           "a\\*b", "![i](https://e.example/i.png)", "**open"]
_SLACK_BARE_LINK = re.compile(r"<(https?://[^|>]*)>")
_DISCORD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_DISCORD_AUTOLINK = re.compile(r"<(https?://[^ >]+)>")


def telegram_shows(md: str) -> tuple[str, list[str]]:
    text, entities = parse_html(telegram_html.render(md))
    return text, [e["type"] for e in entities]


def slack_shows(md: str) -> str:
    rendered = _SLACK_BARE_LINK.sub(r"\1", slack_mrkdwn.render(md))  # an address linked shows as itself
    assert "<http" not in rendered  # no <url|label> link
    return slack_mrkdwn.unescape(rendered.replace("\u200b", ""))


def discord_shows(md: str) -> str:
    rendered = discord_markdown.render(md)
    assert "](" not in rendered.replace("\\]\\(", "")  # no masked link
    return _DISCORD_ESCAPE.sub(r"\1", on_discord(rendered))


def on_discord(text: str) -> str:
    """``text`` as Discord shows it: an address between <> (which Discord links exactly) without them."""
    return _DISCORD_AUTOLINK.sub(r"\1", text)


@pytest.mark.parametrize("word", HOSTILE)
def test_a_word_named_back_shows_as_typed_on_every_platform(word):
    # "/agents log [Verify](https://evil.example)" was answered "No subagent 'Verify' …", the word a link
    # in the bot's own words.
    md = f"No subagent {typed(word)} in this session."
    shown = f"No subagent '{word}' in this session."
    assert telegram_shows(md) == (shown, [])
    assert slack_shows(md) == shown
    assert discord_shows(md) == on_discord(shown)


@pytest.mark.parametrize("message", HOSTILE)
def test_a_late_notes_quote_shows_the_message_as_typed_on_every_platform(message):
    md = picked_up_text(3600, f"{message}\nsecond line")
    shown = f"⏱ Answering your message from 1 h ago: “{message}”"
    assert telegram_shows(md) == (shown, [])
    assert slack_shows(md) == shown
    assert discord_shows(md) == on_discord(shown)


def test_a_lone_carriage_return_ends_the_quoted_line():
    # Markdown ends a line at a CR too: the rest of the message came into the note, a heading here.
    assert picked_up_text(3600, "first\r# second") == "⏱ Answering your message from 1 h ago: “first”"


def test_a_bare_address_in_a_quote_keeps_its_characters_and_links_where_it_says():
    url = "https://example.com/a_b*c~d?e=1&f=[2]"
    md = picked_up_text(3600, f"_see_ {url}_, ok")
    # Telegram would link the "_" after it too: the address goes as a link to itself.
    assert telegram_shows(md) == (f"⏱ Answering your message from 1 h ago: “_see_ {url}_, ok”", ["text_link"])
    assert f'<a href="{url.replace("&", "&amp;")}">' in telegram_html.render(md)
    assert f"<{url.replace('&', '&amp;')}>_, ok”" in slack_mrkdwn.render(md)
    assert literal(f"{url}_, ok") == f"{url}_, ok"  # a backslash after it would be read into the address


def test_what_only_looks_like_an_address_is_escaped():
    assert literal("xhttps://a.example/_b_ and https://") == "xhttps://a.example/\\_b\\_ and https://"


@pytest.mark.parametrize(("text", "address"), [
    ("see “https://example.com/a”", "https://example.com/a"),
    ("‘https://example.com/b_c’, or", "https://example.com/b_c"),
    ("“https://example.com/d.”", "https://example.com/d"),
    ("https://example.com/it’s/here", "https://example.com/it’s/here"),  # within an address it stays
])
def test_a_closing_curly_quote_ends_a_bare_address(text, address):
    [_, inline, _] = markdown.parse(text)
    assert [t.attrGet("href") for t in inline.children or () if t.type == "link_open"] == [address]


def test_only_what_markdown_would_read_as_markup_is_escaped():
    # The terminal shows the Markdown as written: a backslash before each "_" of my_file.py showed there.
    plain = "my_file.py in ~/src, Q&A, a < b > c, C:\\Users, 50% off!"
    assert literal(plain) == plain
    assert literal("_x_ a*b ~~y~~ &amp; <a@b.c> `z` [l](u) \\*") == (
        "\\_x\\_ a\\*b \\~\\~y\\~\\~ \\&amp; \\<a@b.c> \\`z\\` \\[l](u) \\\\\\*")


@pytest.mark.parametrize(("message", "links"), [
    ("see `https://a.example/x` or `y`", []),  # a backtick right after an address cannot take a backslash
    # A backslash before a letter is an escape; Telegram would link the "_" after the second address too.
    ("C:\\https://a.example/_x_ and \\ahttps://b.example/_y_", ["text_link"]),
])
def test_a_quote_with_an_address_next_to_markup_shows_as_typed(message, links):
    md = picked_up_text(3600, message)
    assert telegram_shows(md) == (f"⏱ Answering your message from 1 h ago: “{message}”", links)


@pytest.mark.parametrize("message", [
    "do I need `https://` in front? or `www`",  # a scheme with no address after it: a backslash there made one
    "type http://<host>:8080/",
    "is https://** a glob",
    "use `https://` or `http://`",
])
def test_a_scheme_with_no_address_after_it_shows_as_typed(message):
    md = picked_up_text(3600, message)
    shown = f"⏱ Answering your message from 1 h ago: “{message}”"
    assert telegram_shows(md) == (shown, [])
    assert slack_shows(md) == shown
    assert discord_shows(md) == on_discord(shown)
