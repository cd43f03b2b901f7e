"""What a member of a shared chat can make the bot post through the model, which repeats what it is told.

- A link whose label reads as another address: Slack shows a link's label alone, and Discord masks a web link
  whose label holds none; both renderers write such a label out followed by the address the link opens. A
  character no font shows in the label (``[https\\u200b://bank.example](https://evil.example)``, a soft hyphen
  before it, a word joiner) got past that check, and the chat saw a link reading ``https://bank.example`` that
  opened evil.example.
- On Telegram a labelled link to ``tg://user?id=…`` is a mention of that user (a ``text_mention``), which notifies
  them: ``[the docs](tg://user?id=…)`` pinged any member a hostile one named, behind words that say nothing of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

HIDDEN = ["\u200b", "\u2060", "\ufeff", "\u034f", "\ufe0f", "\u200c"]
"""Characters no font shows, each put in a label's scheme."""


@pytest.mark.parametrize("hidden", HIDDEN)
def test_a_label_reading_as_another_address_is_followed_by_the_links_own(hidden: str) -> None:
    label = f"https{hidden}://bank.example/login"
    markdown = f"Sign in at [{label}](https://evil.example/x)."
    assert slack_mrkdwn.render(markdown) == f"Sign in at {label} (<https://evil.example/x>)."
    assert discord_markdown.render(markdown) == f"Sign in at {label} (<https://evil.example/x>)."


def test_a_hidden_character_before_the_label_hides_no_address() -> None:
    markdown = "[\u00adhttps://bank.example](https://evil.example)"
    assert slack_mrkdwn.render(markdown) == "\u00adhttps://bank.example (<https://evil.example>)"
    assert discord_markdown.render(markdown) == "\u00adhttps://bank.example (<https://evil.example>)"


@pytest.mark.parametrize(("markdown", "slack"), [
    # The link's own address, a hidden character in its label or not, stays a link showing its label.
    ("[https\u200b://x.org](https://x.org/)", "<https://x.org/|https\u200b://x.org>"),
    ("[https://x.org/a\u200bb](https://x.org/a\u200bb)", "<https://x.org/a%E2%80%8Bb|https://x.org/a\u200bb>"),
    # Words are a label, hidden characters in them or not.
    ("[the\u200b bank](https://bank.example)", "<https://bank.example|the\u200b bank>"),
])
def test_a_label_that_is_the_links_own_address_or_words_stays_a_link(markdown: str, slack: str) -> None:
    assert slack_mrkdwn.render(markdown) == slack


@pytest.mark.parametrize(("markdown", "expected"), [
    ("[the docs](tg://user?id=123)", "the docs (tg://user?id=123)"),
    ("[x](TG://USER/?foo=1&id=7)", "x (TG://USER/?foo=1&amp;id=7)"),
    # Other tg:// links open something without notifying anyone.
    ("[bob](tg://resolve?domain=bob)", '<a href="tg://resolve?domain=bob">bob</a>'),
])
def test_telegram_makes_no_mention_of_a_link_to_a_user(markdown: str, expected: str) -> None:
    assert telegram_html.render(markdown) == expected


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


ANSWER = "Your account is locked. Sign in at [https\u200b://bank.example/login](https://evil.example/x) today."
SHOWN = "Your account is locked. Sign in at https\u200b://bank.example/login (<https://evil.example/x>) today."


async def test_slack_shows_where_a_link_labelled_as_another_address_goes(
        slack_fake: FakeSlack, slack: SlackAdapter) -> None:
    await slack.send(Outbound(chat_id="C1", thread_id="1700000000.000100", text=ANSWER))
    assert slack_fake.texts("C1", "1700000000.000100")[-1] == SHOWN


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


async def test_discord_shows_where_a_link_labelled_as_another_address_goes(
        fake: FakeDiscord, discord: DiscordAdapter) -> None:
    channel = fake.dm_channel(42)
    await discord.send(Outbound(chat_id=channel, thread_id=None, text=ANSWER))
    assert fake.bot_messages(channel)[-1].content == SHOWN


async def test_telegram_answer_pings_no_member_by_a_link() -> None:
    async with FakeTelegram() as tg:
        adapter = TelegramAdapter(tg.token, api_base=tg.base_url)
        try:
            await adapter.send(Outbound(chat_id="-1001", thread_id=None, text=(
                "**Release notes**: see [the docs](tg://user?id=123) and [these](tg://user?id=456).")))
        finally:
            await adapter.stop()
    message = tg.messages["-1001"][-1]
    assert message["text"] == "Release notes: see the docs (tg://user?id=123) and these (tg://user?id=456)."
    assert [e["type"] for e in message["entities"]] == ["bold"]


async def test_the_fake_telegram_makes_a_mention_of_a_link_to_a_user() -> None:
    # What the test above would have seen sent as before: Telegram's mention, read back by aiogram.
    async with FakeTelegram() as tg:
        bot = Bot(tg.token, session=AiohttpSession(api=TelegramAPIServer.from_base(tg.base_url)))
        try:
            sent = await bot.send_message(-1001, '<a href="tg://user?id=123">the docs</a>', parse_mode="HTML")
        finally:
            await bot.session.close()
    [entity] = sent.entities or []
    assert entity.type == "text_mention" and entity.user is not None and entity.user.id == 123
