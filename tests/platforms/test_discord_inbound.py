"""Which Discord messages become events (`platforms.discord_inbound`): a message without text or
files, the real discord.py client against the loopback fake."""

from __future__ import annotations

import logging

import pytest

from platforms.base import Inbound, Outbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads

GUILD, CHANNEL, THREAD, USER = 500, 600, 701, 42
NO_CONTENT = "arrived without content"


class Sink:
    def __init__(self) -> None:
        self.events: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)


def content_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR and NO_CONTENT in r.getMessage()]


async def test_a_sticker_alone_is_passed_over_and_leaves_the_missing_intents_hint_to_a_message_without_text(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    async with FakeDiscord(strip_message_content=True) as fake:  # as for an app without the intent
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.events)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            sticker = fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, stickers=["wave"])
            replied = fake.push_guild_message(GUILD, CHANNEL, USER, "", reply_to_bot=True, stickers=["thumbs up"])
            fake.push_guild_message(GUILD, CHANNEL, USER, "still there?", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 2)
            assert content_errors(caplog) == []
            passed_over = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
            assert f"discord: message {sticker} holds sticker only: not answered" in passed_over
            assert f"discord: message {replied} holds sticker only: not answered" in passed_over

            # A reply with nothing at all in it is what a withheld content looks like: said once.
            fake.push_guild_message(GUILD, CHANNEL, USER, "a reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "another reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "anyone?", mention_bot=True)
            await fake.wait_for(lambda: len(sink.events) == 3)
            assert len(content_errors(caplog)) == 1
            assert [e.text for e in sink.events] == ["hi", "still there?", "anyone?"]
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_forwarded_sticker_in_the_bots_thread_is_passed_over(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.events)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            forward = fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, forwarded=True,
                                              stickers=["party"])
            fake.push_guild_message(GUILD, CHANNEL, USER, "that one", thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 2)
            assert [e.text for e in sink.events] == ["hi", "that one"]
            assert content_errors(caplog) == []
            assert f"discord: message {forward} holds sticker only: not answered" in caplog.messages
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []
