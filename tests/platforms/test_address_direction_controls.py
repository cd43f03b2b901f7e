"""Direction controls in or before a link the model writes, on Slack and Discord. Their clients lay a message out by
Unicode's bidirectional algorithm, as any renderer does: a right-to-left override (U+202E) in an address showed
``https://\\u202emoc.elgoog.www@evil.example/`` as ``https://elpmaxe.live@www.google.com/``, linked to evil.example;
one before it turned the whole address round (``https://evil.example/moc.elgoog.www//:sptth`` read
``https://www.google.com/…``), and a label too (``[\\u202e/moc.elgoog.www//:sptth](https://evil.example/)``), past
the check that a label is no other address. Marks, strong, turn round what is between two of them. A model says
what a page it read tells it to: such an answer is a link to click, disguised. An address shows its controls
percent-encoded, as an address bar does (the web chat's: tests/scenarios/test_web_chat_address_direction.py), a
label none, and a link after an override is a left-to-right isolate (U+2066 … U+2069)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.formatting import discord_markdown, slack_mrkdwn
from platforms.slack import SlackAdapter
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

EVIL = "moc.elgoog.www@evil.example/"
ANSWER = (f"Log in at https://\u202e{EVIL} then go on\n\n"
          f"or at <https://\u2067{EVIL}> then go on\n\n"
          "or \u202eat https://evil.example/moc.elgoog.www//:sptth")
SLACK = (f"Log in at <https://%E2%80%AE{EVIL}> then go on\n\n"
         f"or at <https://%E2%81%A7{EVIL}> then go on\n\n"
         "or \u202eat \u2066<https://evil.example/moc.elgoog.www//:sptth>\u2069")
# Bare, Discord would take the U+2069 into the address: between <>, it links it exactly.
DISCORD = (f"Log in at https://%E2%80%AE{EVIL} then go on\n\n"
           f"or at https://%E2%81%A7{EVIL} then go on\n\n"
           "or \u202eat \u2066<https://evil.example/moc.elgoog.www//:sptth>\u2069")


@pytest.mark.parametrize(("markdown", "expected"), [
    (ANSWER, SLACK),
    (f"[https://\u202e{EVIL}](https://\u202e{EVIL})", f"<https://%E2%80%AE{EVIL}>"),
    (f"[log in](https://\u202e{EVIL})", f"<https://%E2%80%AE{EVIL}|log in>"),
    # A label's controls go: reversed, it read as another address, which Slack shows alone.
    ("[\u202e/moc.elgoog.www//:sptth](https://evil.example/)", "<https://evil.example/|/moc.elgoog.www//:sptth>"),
    ("[https\u200f//:\u200fbank.example](https://evil.example)", "<https://evil.example|https//:bank.example>"),
    ("\u202e [/moc.elgoog.www//:sptth](https://evil.example/) **https://x.example/**",
     "\u202e \u2066<https://evil.example/|/moc.elgoog.www//:sptth>\u2069 *\u2066<https://x.example/>\u2069*"),
    # Marks within an address show percent-encoded; its link keeps them, as Markdown reads them.
    ("https://5.6.7.8\u200f@1.2.3.4/\u200fx",
     "<https://5.6.7.8\u200f@1.2.3.4/\u200fx|https://5.6.7.8%E2%80%8F@1.2.3.4/%E2%80%8Fx>"),
    # An override after a link turns nothing of it round: the link stays as it was.
    ("see https://x.example/ then \u202e this", "see <https://x.example/> then \u202e this"),
])
def test_slack_shows_a_link_as_the_address_it_goes_to(markdown: str, expected: str) -> None:
    assert slack_mrkdwn.render(markdown) == expected


@pytest.mark.parametrize(("markdown", "expected"), [
    (ANSWER, DISCORD),
    (f"[https://\u202e{EVIL}](https://\u202e{EVIL})", f"https://%E2%80%AE{EVIL}"),
    (f"[log in](https://\u202e{EVIL})", f"[log in](https://%E2%80%AE{EVIL})"),
    ("[\u202e/moc.elgoog.www//:sptth](https://evil.example/)", "[/moc.elgoog.www//:sptth](https://evil.example/)"),
    ("\u202e [/moc.elgoog.www//:sptth](https://evil.example/) **https://x.example/**",
     "\u202e \u2066[/moc.elgoog.www//:sptth](https://evil.example/)\u2069 **\u2066<https://x.example/>\u2069**"),
    ("https://5.6.7.8\u200f@1.2.3.4/\u200fx", "https://5.6.7.8%E2%80%8F@1.2.3.4/%E2%80%8Fx"),
    ("see https://x.example/ then \u202e this", "see https://x.example/ then \u202e this"),
])
def test_discord_shows_a_link_as_the_address_it_goes_to(markdown: str, expected: str) -> None:
    assert discord_markdown.render(markdown) == expected


@pytest.fixture
async def slack_fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack(slack_fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = SlackAdapter(bot_token=slack_fake.bot_token, app_token=slack_fake.app_token,
                           api_base=slack_fake.api_base, ping_interval=0.2)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()


async def test_slack_gets_each_address_as_the_address_it_links_to(slack_fake: FakeSlack, slack: SlackAdapter) -> None:
    await slack.send(Outbound(chat_id="C1", thread_id=None, text=ANSWER))
    assert slack_fake.texts("C1")[-1] == SLACK


fake = fake_discord()


@pytest.fixture
async def discord(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = adapter_for(fake)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()
    await join_heartbeat_threads()


async def test_discord_gets_each_address_as_the_address_it_links_to(fake: FakeDiscord, discord: DiscordAdapter) -> None:
    channel = fake.dm_channel(42)
    await discord.send(Outbound(chat_id=channel, thread_id=None, text=ANSWER))
    assert fake.bot_messages(channel)[-1].content == DISCORD


# A message with no direction control is sent as before them: the marks around a link are no text to the rules that
# read what is next to it (a style's word edge on Slack, a line's start or what follows an address on Discord).
@pytest.mark.parametrize(("markdown", "slack", "discord"), [
    ("*it*[https://a.example](https://b.example/)", "_it_\u200bhttps://a.example (<https://b.example/>)",
     "*it*https://a.example (<https://b.example/>)"),
    ("[foo](foo)**b**", "foo\u200b*b*", "foo**b**"),
    ("[# Title](/docs)", "# Title (/docs)", "\\# Title (/docs)"),
    ("x\n[- item](tel:123)", "x\n- item (tel:123)", "x\n\\- item (tel:123)"),
    ("[1. first](/a)", "1. first (/a)", "1\\. first (/a)"),
    ("<https://i.example/>[, the docs](/docs)", "<https://i.example/>, the docs (/docs)",
     "https://i.example/, the docs (/docs)"),
])
def test_a_link_is_read_with_what_is_next_to_it_as_before(markdown: str, slack: str, discord: str) -> None:
    assert slack_mrkdwn.render(markdown) == slack
    assert discord_markdown.render(markdown) == discord
