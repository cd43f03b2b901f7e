"""A web address the model writes as itself, on Discord: Discord links it by itself, by its own rule for
where an address ends, which is not CommonMark's. Where the two differ, the address goes between ``<>``,
which Discord links exactly; elsewhere it stays as written."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.formatting import discord_markdown
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42
WIKI = "https://en.wikipedia.org/wiki/Python_(programming_language)"

fake = fake_discord()


@pytest.fixture
async def discord_adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = adapter_for(fake)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()
    await join_heartbeat_threads()


async def content(fake: FakeDiscord, adapter: DiscordAdapter, markdown: str) -> str:
    channel = fake.dm_channel(USER)
    await adapter.send(Outbound(chat_id=channel, thread_id=None, text=markdown))
    return fake.bot_messages(channel)[-1].content


def discord_links(content: str) -> list[str]:
    """The addresses Discord's client links in ``content`` by itself: between ``<>`` exactly, else by
    simple-markdown's bare URL rule (up to a space or ``<``, a trailing ``.,:;"')]`` given back)."""
    return [m.group(1) or m.group(2)
            for m in re.finditer(r"<(https?://[^ >]+)>|(https?://[^\s<]+[^<.,:;\"')\]\s])", content)]


@pytest.mark.parametrize(
    ("markdown", "address", "sent"),
    [
        # Discord pairs no brackets: written bare, the link would go to ".../Python_(programming_language".
        (f"See {WIKI} for more.", WIKI, f"See <{WIKI}> for more."),
        (f"**{WIKI}**", WIKI, f"**<{WIKI}>**"),
        (f"- the language: {WIKI}", WIKI, f"- the language: <{WIKI}>"),
        (f"## Read {WIKI}", WIKI, f"## Read <{WIKI}>"),
        (f"[{WIKI}]({WIKI})", WIKI, f"<{WIKI}>"),
        # What follows an address unspaced, which CommonMark leaves out of it and Discord takes in.
        ("Try https://example.com/start!", "https://example.com/start", "Try <https://example.com/start>!"),
        ("Seen https://example.com/?q=a?", "https://example.com/?q=a", "Seen <https://example.com/?q=a>?"),
        # Between a < and a > of the text, Discord links it exactly already: a second pair would link "<https://…".
        ("a \\<https://example.com/x> b", "https://example.com/x", "a <https://example.com/x> b"),
        ("文档见https://example.com/docs，然后点击安装", "https://example.com/docs",
         "文档见<https://example.com/docs>，然后点击安装"),
        ("“https://example.com/a” and https://example.com/b…", "https://example.com/a",
         "“<https://example.com/a>” and <https://example.com/b>…"),
    ],
)
async def test_an_address_discord_would_link_otherwise_goes_between_angle_brackets(
        fake: FakeDiscord, discord_adapter: DiscordAdapter, markdown: str, address: str, sent: str) -> None:
    written = await content(fake, discord_adapter, markdown)
    assert written == sent
    assert discord_links(written)[0] == address


@pytest.mark.parametrize(
    "markdown",
    [
        "see https://example.com/a_b.",
        "(see https://example.com/docs), then",
        "https://example.com/a, and https://example.com/b: done",
        "<https://example.com/x> and https://example.com/y; or 'https://example.com/z'",
    ],
)
async def test_an_address_discord_links_as_written_stays_as_written(fake: FakeDiscord, discord_adapter: DiscordAdapter,
                                                                    markdown: str) -> None:
    written = await content(fake, discord_adapter, markdown)
    assert "<" not in written
    assert discord_links(written) == re.findall(r"https://example\.com/[a-z_]+", markdown)


def test_a_line_of_many_addresses_and_no_spaces_renders_in_linear_time() -> None:
    # Chinese puts no space after an address: what follows each one ran to the end of the line, read again
    # for every address in it (a second of the event loop for 600, four for 2,000).
    line = "".join(f"第{i}条见https://example.com/docs/{i}，" for i in range(2000))
    discord_markdown.render("warm")  # the parser is built once, at the first render
    # This thread's CPU: a loaded machine stretches the wall clock, and the SDK's heartbeat threads this process's.
    started = time.thread_time()
    rendered = discord_markdown.render(line)
    assert time.thread_time() - started < 0.5
    assert rendered.count("<https://example.com/docs/") == 2000
