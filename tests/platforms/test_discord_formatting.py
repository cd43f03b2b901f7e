"""Markdown on Discord: the adapter writes Discord's own Markdown and discord.py posts it to
FakeDiscord, which records the content."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42


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


@pytest.mark.parametrize(
    ("code", "written"),
    [
        ("a`b", "``a`b``"),
        ("a``b", "`a``b`"),
        ("x = '```'", "`x = '```'`"),
        ("`a", "`` `a``"),
        ("a`", "``a` ``"),
        ("``", "` `` `"),
        (" `x", "``  `x``"),
        # Runs of one and of two: no fence Discord has holds both, so each run of two is split.
        ("a`b``c", "``a`b`\u200b`c``"),
    ],
)
async def test_inline_code_with_backticks_reads_back_as_written_with_no_zero_width_space_unless_unavoidable(
        fake: FakeDiscord, discord_adapter: DiscordAdapter, code: str, written: str) -> None:
    # A zero-width space is copied with the code: `a``b` went as `a`\u200b`b`, pasted into a shell as such.
    fence = "`" * (max(map(len, re.findall("`+", code))) + 1)
    sent = await content(fake, discord_adapter, f"{fence} {code} {fence}")
    assert sent == written
    if "\u200b" not in sent:
        assert discord_inline_code(sent) == code


def discord_inline_code(content: str) -> str:
    """The code Discord shows for inline code filling ``content``: its client's rule (simple-markdown's
    ``inlineCode``, three backticks being a code block first), one space dropped next to a fence's backtick."""
    assert not content.startswith("```")
    m = re.fullmatch(r"(`+)([\s\S]*?[^`])\1(?!`)", content)
    assert m is not None, content
    return re.sub(r"^ (?= *`)|(` *) $", r"\1", m.group(2))


@pytest.mark.parametrize(
    ("markdown", "discord_md"),
    [
        ("a **bold** b", "a **bold** b"),
        ("an *italic* and _this_", "an *italic* and *this*"),
        ("~~gone~~ now", "~~gone~~ now"),
        ("run `ls -l` and ``a`b``", "run `ls -l` and ``a`b``"),
        # Three backticks open a code block on Discord, whose inline code has one or two; inside one
        # they are the code's, as is a run of two between single backticks.
        ("Start with ```` ``` ```` then", "Start with ` ``` ` then"),
        ("see [the docs](https://example.com/a_b)", "see [the docs](https://example.com/a_b)"),
        ("bare <https://example.com/a_b>", "bare https://example.com/a_b"),
        ("<https://ru.wikipedia.org/wiki/Москва> <me@example.com>", "https://ru.wikipedia.org/wiki/Москва me@example.com"),
        # Labels a masked link cannot hold: Discord shows backslashes in one as typed, and would read a
        # bracket or a web address in it as the link's end or refuse the link.
        ("see [list\\[0\\]](https://example.com/a_(b))", "see list[0] (<https://example.com/a_(b)>)"),
        ("[a \\] b](https://example.com/)", "a ] b (<https://example.com/>)"),
        ("[\\*args](https://example.com/)", "\\*args (<https://example.com/>)"),
        ("[see https://a.example](https://b.example/)", "see https://a.example (<https://b.example/>)"),
        ("[**kwargs** docs](https://example.com/)", "[**kwargs** docs](https://example.com/)"),
        ("see https://example.com/_a_/b and _this_", "see https://example.com/_a_/b and *this*"),
        # A trailing underscore is not the address's (as on GitHub): escaped, it shows as typed; the address,
        # ending in a bracket Discord would leave out of it and followed by the escape it would take in,
        # goes between <> (test_discord_bare_urls).
        ("(https://example.com/~~a~~/b_(c)_)", "(<https://example.com/~~a~~/b_(c)>\\_)"),
        ("> quoted\n> **words**", "> quoted\n> **words**"),
        ("# Title\n\n#### small", "# Title\n\n**small**"),
        # A heading is bold already; a deep one is written as bold, which four asterisks would end at once.
        ("#### **Note** and more\n\n## **Summary**", "**Note and more**\n\n## Summary"),
        ("- one\n  - nested\n- two", "- one\n  - nested\n- two"),
        ("```python\nx = '```'\n```", "```python\nx = '`\u200b``'\n```"),
        ("| a | b |\n|---|---|\n| 1 | 22 |", "```\na | b\n--+---\n1 | 22\n```"),
        ("snake_case, 2 * 3, \\*not italic\\*, ||not a spoiler||", "snake_case, 2 * 3, \\*not italic\\*, "
                                                                   "\\|\\|not a spoiler\\|\\|"),
        ("\\# not a heading", "\\# not a heading"),
        # A backslash before a digit is shown as typed: a number's full stop is escaped instead, and only
        # where it would make a list.
        ("1\\. not a list\n\n3.14 is pi", "1\\. not a list\n\n3.14 is pi"),
    ],
)
async def test_each_element_in_discord_markdown(fake: FakeDiscord, discord_adapter: DiscordAdapter, markdown: str,
                                                discord_md: str) -> None:
    assert await content(fake, discord_adapter, markdown) == discord_md


async def test_edits_are_rendered_too(fake: FakeDiscord, discord_adapter: DiscordAdapter) -> None:
    channel = fake.dm_channel(USER)
    sent = await discord_adapter.send(Outbound(chat_id=channel, thread_id=None, text="⏳ working"))
    await discord_adapter.edit(channel, None, sent.message_id, "| k | v |\n|---|---|\n| a | 1 |")
    assert fake.bot_messages(channel)[-1].content == "```\nk | v\n--+--\na | 1\n```"


def test_measure_counts_the_rendered_content() -> None:
    adapter = DiscordAdapter("token")
    assert adapter.measure("| a | b |\n|-|-|\n| 1 | 2 |") == len("```\na | b\n--+--\n1 | 2\n```")
    assert adapter.measure("<https://example.com>") == len("https://example.com")
