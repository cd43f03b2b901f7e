"""Discord's 2,000-character limit counts Unicode code points: its API is Python 3 and measures ``len`` of
the content (a Discord engineer, discord/discord-api-docs#1315: ``"\\U0010FFFF \\uffff"`` is 3 characters).
An emoji outside the Basic Multilingual Plane is one character there, not two as UTF-16 would count it
(Telegram's measure). The adapter's `measure` counts the same, so an answer of astral characters is
split where Discord would refuse it, and no sooner. The real discord.py client against the loopback fake,
which refuses content past 2,000 code points as Discord does (50035)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.splitting import split_text
from platforms.base import Inbound, MessageTooLong, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import TEXT_LIMIT, FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42
EMOJI = "\U0001F600"  # 😀: one code point, two UTF-16 units

fake = fake_discord()


@pytest.fixture
async def adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        pass

    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        yield adapter
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


def test_an_astral_character_counts_as_one() -> None:
    adapter = DiscordAdapter("token")
    assert adapter.text_limit == TEXT_LIMIT == 2000
    assert adapter.measure(EMOJI * 2000) == 2000  # UTF-16 would say 4,000
    assert adapter.measure("a" + EMOJI) == 2


@pytest.mark.parametrize(("text", "parts"), [
    (EMOJI * 2000, 1),  # at the limit: one message (counted in UTF-16 units, two)
    ("x" * 1999 + EMOJI, 1),
    (EMOJI * 2001, 2),  # one past it: two
    ("x" * 2000 + EMOJI, 2),
], ids=["2000-emoji", "1999-and-an-emoji", "2001-emoji", "2000-and-an-emoji"])
async def test_astral_characters_near_the_limit_are_split_as_discord_counts_them(
        fake: FakeDiscord, adapter: DiscordAdapter, text: str, parts: int) -> None:
    channel = fake.dm_channel(USER)
    split = split_text(text, adapter.text_limit, adapter.measure)
    assert len(split) == parts and "".join(split) == text
    for i, part in enumerate(split):
        await adapter.send(Outbound(channel, None, part, idempotency_key=f"t1:{i}"))
    assert "".join(m.content for m in fake.bot_messages(channel)) == text


async def test_one_astral_character_past_the_limit_is_refused_as_too_long(
        fake: FakeDiscord, adapter: DiscordAdapter) -> None:
    """What the measure guards against: Discord's refusal, which an unsplit part would meet."""
    with pytest.raises(MessageTooLong):
        await adapter.send(Outbound(fake.dm_channel(USER), None, EMOJI * 2001, idempotency_key="t1:0"))
