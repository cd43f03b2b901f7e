"""A Discord message whose text shows nothing, only invisible characters (zero-width spaces, word joiners: what
`platforms.formatting.blank.is_blank` calls blank): passed over, as a message without text, files or anything to
read is, where it cost a turn of the model answering what no one could read; nor is it taken for content Discord
withheld (the missing intent's error). A file with such text is the file; the bot's mention with it is the mention
alone (``@switchboard``); an edit to it is not handed over. The real discord.py client against the loopback fake."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord, Upload
from tests.discord_client import adapter_for, join_heartbeat_threads

GUILD, CHANNEL, THREAD, USER = 500, 600, 701, 42
INVISIBLE = ["\u200b", "\u200b\u2060", "\ufeff", " \u200d ", "\ufe0f\u2060\n\u200b"]


class Sink:
    def __init__(self) -> None:
        self.events: list[Inbound] = []
        self.edits: list[str] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)

    async def edited(self, platform: str, chat: str, thread: str | None, message: str, text: str) -> bool:
        self.edits.append(text)
        return True


@pytest.fixture
async def discord() -> AsyncIterator[tuple[FakeDiscord, DiscordAdapter, Sink]]:
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        adapter.bind_edits(sink.edited)
        await adapter.start(sink)
        try:
            yield fake, adapter, sink
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def texts_before(fake: FakeDiscord, sink: Sink) -> list[str]:
    """The texts handed over, once a DM written after those pushed so far is: handed over in order."""
    fake.push_dm(USER, "the last one")
    await fake.wait_for(lambda: sink.events and sink.events[-1].text == "the last one")
    return [event.text for event in sink.events[:-1]]


@pytest.mark.parametrize("text", INVISIBLE)
async def test_a_message_of_invisible_characters_alone_is_passed_over(discord, text, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    fake, adapter, sink = discord
    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
    await fake.wait_for(lambda: sink.events)
    await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))  # the bot's thread now
    fake.push_dm(USER, text)
    fake.push_guild_message(GUILD, CHANNEL, USER, text, thread_id=THREAD)
    fake.push_guild_message(GUILD, CHANNEL, USER, text, reply_to_bot=True)
    assert await texts_before(fake, sink) == ["hi"]
    assert not [r for r in caplog.records if "arrived without content" in r.getMessage()]  # no intent missing
    assert sum("only invisible characters" in r.getMessage() for r in caplog.records) == 3


async def test_the_bots_mention_with_invisible_characters_alone_is_the_mention_alone(discord) -> None:
    fake, _, sink = discord
    fake.push_guild_message(GUILD, CHANNEL, USER, "\u200b\u2060", mention_bot=True)
    fake.push_dm(USER, f"<@{fake.bot_id}>\ufeff")
    assert await texts_before(fake, sink) == ["@switchboard", "@switchboard"]


async def test_a_file_with_text_of_invisible_characters_alone_is_the_file(discord) -> None:
    fake, _, sink = discord
    fake.push_dm(USER, "\u200b", files=[Upload("notes.md", b"# notes", "text/markdown; charset=utf-8")])
    await fake.wait_for(lambda: sink.events)
    (event,) = sink.events
    assert event.text == "" and [a.name for a in event.attachments] == ["notes.md"]


async def test_an_edit_to_invisible_characters_alone_is_not_handed_over(discord) -> None:
    fake, _, sink = discord
    message = fake.push_dm(USER, "deploy to prod")
    await fake.wait_for(lambda: sink.events)
    fake.edit_message(fake.dm_channel(USER), message, "\u200b\u2060")
    fake.edit_message(fake.dm_channel(USER), message, "deploy to staging")
    await fake.wait_for(lambda: sink.edits)
    assert sink.edits == ["deploy to staging"]  # handed over in order: the first was passed over


async def test_a_text_command_with_invisible_characters_glued_on_is_still_taken(discord) -> None:
    """The gateway reads ``!stop`` and a zero-width space as ``!stop`` (`gateway.commands.parse`); in a channel the bot
    posted in, without a mention, it was not taken: the running turn went on."""
    fake, adapter, sink = discord
    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True)
    await fake.wait_for(lambda: sink.events)
    await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="hello"))  # the bot posted here now
    fake.push_guild_message(GUILD, CHANNEL, USER, "!stop\u200b")
    fake.push_guild_message(GUILD, CHANNEL, USER, "\u2060!stop")
    assert await texts_before(fake, sink) == ["hi", "!stop\u200b", "\u2060!stop"]
