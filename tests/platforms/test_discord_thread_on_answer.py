"""A thread a member opens on the bot's answer (Discord's "Create Thread" on a message: the thread has the message's
id) is the bot's, as one it opened: its messages are heard without a mention. Real discord.py in `DiscordAdapter`
against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.sink import Sink

GUILD, CHANNEL, BOB, ALICE = 500, 600, 42, 43

fake = fake_discord()


@pytest.fixture
async def started(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Sink]]:
    """An adapter that has heard Bob ask in ``CHANNEL``."""
    sink = Sink()
    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True)
        await fake.wait_for(lambda: sink.inbound)
        yield adapter, sink
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def heard(fake: FakeDiscord, sink: Sink, thread: str, text: str) -> list[tuple[str, str | None, str]]:
    """What ``sink`` was handed of Alice's ``text`` in ``thread``, without a mention, once a mention sent after it
    (in the channel) was handed over: events go in order."""
    count = len(sink.inbound)
    fake.push_guild_message(GUILD, CHANNEL, ALICE, text, thread_id=thread)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    return [(m.chat_id, m.thread_id, m.text) for m in sink.inbound[count:] if m.text == text]


async def test_a_thread_opened_on_the_bots_answer_is_heard_without_a_mention(fake, started):
    adapter, sink = started
    sent = await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="about 3 MB", kind="reply"))
    assert await heard(fake, sink, sent.message_id, "and compressed?") == [
        (str(CHANNEL), sent.message_id, "and compressed?")]


async def test_a_thread_on_anything_else_still_needs_a_mention(fake, started):
    adapter, sink = started
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "lunch?")  # a member's own message
    assert await heard(fake, sink, said, "pizza") == []
    refusal = await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="not for you", kind="command"))
    assert await heard(fake, sink, refusal.message_id, "why not?") == []  # a command's answer, or a refusal
