"""An invisible mark after a web address the model writes as itself, on Slack and Discord: a right-to-left
mark after an address in Hebrew or Arabic, a zero-width space, a word joiner (Unicode's format characters, Cf).
Markdown takes it into the address; linked with it, the address went to another page (…/a%E2%80%8F). It stays
in the text, after the link. (Telegram's: tests/platforms/test_telegram_bare_urls.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.slack import SlackAdapter

MARKS = ["\u200f", "\u200b", "\u2060", "\u200f\u200b"]
ADDRESS = "https://example.com/a"
# JavaScript's \s, which Discord's client reads addresses with: no format character is whitespace to it.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DISCORD_LINK = re.compile(rf"<(https?://[^ >]+)>|(https?://[^{_JS_SPACE}<]+[^<.,:;\"')\]{_JS_SPACE}])")
_SLACK_LINK = re.compile(r"<(https?://[^|>]+)(?:\|[^>]*)?>")


def discord_links(content: str) -> list[str]:
    """The addresses Discord's client links in ``content``: between ``<>`` exactly, else by simple-markdown's bare
    URL rule (up to a space or ``<``, a trailing ``.,:;"')]`` given back)."""
    return [m.group(1) or m.group(2) for m in _DISCORD_LINK.finditer(content)]


def slack_links(mrkdwn: str) -> list[str]:
    return _SLACK_LINK.findall(mrkdwn)


def written(mark: str) -> list[str]:
    """Markdown with an address and ``mark`` after it: bare in a Hebrew sentence, before punctuation Markdown
    leaves out of it, within bold, and between ``<>``."""
    return [f"ראה {ADDRESS}{mark} עוד", f"see {ADDRESS}{mark}!", f"**{ADDRESS}{mark}**",
            f"see <{ADDRESS}{mark}> now"]


@pytest.mark.parametrize("mark", MARKS)
def test_an_invisible_mark_after_an_address_stays_out_of_its_slack_link(mark: str) -> None:
    for markdown in written(mark):
        rendered = slack_mrkdwn.render(markdown)
        assert slack_links(rendered) == [ADDRESS], markdown
        assert f"<{ADDRESS}>{mark}" in rendered  # shown where it was written, after the address


@pytest.mark.parametrize("mark", MARKS)
def test_an_invisible_mark_after_an_address_stays_out_of_its_discord_link(mark: str) -> None:
    # Discord's client would take it in as Markdown does: the address goes between <>, which it links exactly.
    for markdown in written(mark):
        rendered = discord_markdown.render(markdown)
        assert discord_links(rendered) == [ADDRESS], markdown
        assert f"<{ADDRESS}>{mark}" in rendered


def test_an_address_without_a_mark_is_rendered_as_before() -> None:
    assert slack_mrkdwn.render(f"ראה {ADDRESS} עוד") == f"ראה <{ADDRESS}> עוד"
    assert discord_markdown.render(f"ראה {ADDRESS} עוד") == f"ראה {ADDRESS} עוד"
    # A mark within an address is the address's own, as Markdown reads it.
    assert slack_links(slack_mrkdwn.render(f"see {ADDRESS}\u200fb now")) == [f"{ADDRESS}\u200fb"]


# Format characters that end an address as its own: a zero-width joiner after a virama (a Malayalam word as written
# before its chillu letters, which Telegram's apps link whole too), the tags of the flag of Scotland.
OWN = ["https://ml.wikipedia.org/wiki/\u0d05\u0d35\u0d28\u0d4d\u200d",
       "https://example.com/\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]


@pytest.mark.parametrize("address", OWN)
def test_a_joiner_or_an_emojis_tags_at_the_end_of_an_address_stay_in_its_link(address: str) -> None:
    markdown = f"see {address} now"
    assert slack_links(slack_mrkdwn.render(markdown)) == [address]
    assert discord_links(discord_markdown.render(markdown)) == [address]
    assert telegram_html.render(markdown) == markdown  # Telegram links it whole by itself


@pytest.mark.parametrize("render", [slack_mrkdwn.render, discord_markdown.render, telegram_html.render])
def test_a_scheme_with_only_invisible_marks_after_it_is_no_link(render) -> None:
    # As "https://" alone is none: a link to "https://" went nowhere.
    for mark in MARKS:
        assert render(f"כתובת מתחילה ב https://{mark} ועוד") == f"כתובת מתחילה ב https://{mark} ועוד"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()


async def test_slack_gets_the_address_linked_without_the_right_to_left_mark_after_it(fake: FakeSlack,
                                                                                    slack: SlackAdapter) -> None:
    await slack.send(Outbound(chat_id="C1", thread_id=None, text=f"ראה {ADDRESS}\u200f עוד"))
    assert fake.texts("C1")[-1] == f"ראה <{ADDRESS}>\u200f עוד"
