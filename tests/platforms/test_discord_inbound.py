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


async def test_a_sticker_alone_is_read_by_its_name_and_leaves_the_missing_intents_hint_to_a_message_without_text(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    async with FakeDiscord(strip_message_content=True) as fake:  # as for an app without the intent
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.events)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, stickers=["wave"])
            fake.push_guild_message(GUILD, CHANNEL, USER, "", reply_to_bot=True, stickers=["thumbs up"])
            # Withheld with the content, as Discord does: nothing left to read.
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, poll=("Lunch?", ["Yes", "No"]))
            fake.push_guild_message(GUILD, CHANNEL, USER, "still there?", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 4)
            assert [e.text for e in sink.events] == ["hi", "(a sticker: wave)", "(a sticker: thumbs up)",
                                                     "still there?"]
            assert len(content_errors(caplog)) == 1  # the poll's: nothing at all came

            # A reply with nothing at all in it is what a withheld content looks like: said once.
            fake.push_guild_message(GUILD, CHANNEL, USER, "a reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "another reply", reply_to_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "anyone?", mention_bot=True)
            await fake.wait_for(lambda: len(sink.events) == 5)
            assert len(content_errors(caplog)) == 1
            assert sink.events[-1].text == "anyone?"
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_forwarded_sticker_in_the_bots_thread_is_read_by_its_name() -> None:
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.events)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, forwarded=True, stickers=["party"])
            fake.push_guild_message(GUILD, CHANNEL, USER, "that one", thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 3)
            assert [e.text for e in sink.events] == ["hi", "(a sticker: party)", "that one"]
            assert sink.events[1].forwarded
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_poll_or_a_sticker_sent_to_the_bot_reaches_the_model_as_text() -> None:
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_dm(USER, "", poll=("Where do we eat?", ["Pizza", "Sushi"]))
            fake.push_dm(USER, "", stickers=["wave", "heart"])
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.events)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, poll=("Lunch?", ["Yes", "No"]))
            fake.push_guild_message(GUILD, CHANNEL, USER, "", poll=("Not for the bot?", ["No"]))  # not addressed
            fake.push_guild_message(GUILD, CHANNEL, USER, "the last one", thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 5)
            assert [e.text for e in sink.events] == [
                "📊 Poll: Where do we eat?\n- Pizza\n- Sushi", "(a sticker: wave)\n(a sticker: heart)", "hi",
                "📊 Poll: Lunch?\n- Yes\n- No", "the last one"]
            assert not any(e.is_command for e in sink.events)
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


CI_REPORT = {"title": "Build #42 failed", "url": "https://ci.example.com/builds/42", "author": {"name": "ci-bot"},
             "description": "2 tests failed on main.", "footer": {"text": "took 4m 12s"},
             "fields": [{"name": "Commit", "value": "abc123", "inline": True},
                        {"name": "Failed", "value": "test_login, test_logout", "inline": True}]}


async def test_a_forwarded_embed_reaches_the_model_as_its_words(caplog: pytest.LogCaptureFixture) -> None:
    """A bot's card (a CI report, a feed's post) forwarded to the bot holds no text of its own: it was passed over,
    the user answered by silence."""
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_dm(USER, "", forwarded=True, embeds=[CI_REPORT])
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.events) == 2)
            await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="hello"))
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, forwarded=True,
                                    embeds=[{"description": "Deploy finished.", "fields": [
                                        {"name": "\u200b", "value": "web-1, web-2"}]}, {"title": "Rollback plan"}])
            image = fake.push_dm(USER, "", forwarded=True, embeds=[{"type": "image", "thumbnail": {"url": "x"}}])
            fake.push_dm(USER, "the last one")
            await fake.wait_for(lambda: len(sink.events) == 4)
            assert [e.text for e in sink.events] == [
                "🔗 Embed: Build #42 failed\nby ci-bot\nhttps://ci.example.com/builds/42\n2 tests failed on main.\n"
                "- Commit: abc123\n- Failed: test_login, test_logout\ntook 4m 12s",
                "hi", "🔗 Embed\nDeploy finished.\n- web-1, web-2\n🔗 Embed: Rollback plan", "the last one"]
            assert sink.events[0].forwarded and not any(e.is_command for e in sink.events)
            passed_over = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
            assert f"discord: message {image} holds embeds only: not answered" in passed_over  # no words in it
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_a_mention_alone_is_heard_as_the_mention(caplog: pytest.LogCaptureFixture) -> None:
    """"@switchboard" (the bot, or its role) and nothing else: someone calling the bot. It was passed over in
    silence, as if the bot were down; now the model reads the mention and answers."""
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "", mention_bot=True)
            fake.push_guild_message(GUILD, CHANNEL, USER, "", mention_roles=[fake.bot_role(GUILD)])
            fake.push_dm(USER, f"<@{fake.bot_id}>")
            fake.push_guild_message(GUILD, CHANNEL, USER, "what now?", mention_bot=True)
            await fake.wait_for(lambda: len(sink.events) == 4)
            assert [e.text for e in sink.events] == ["@switchboard", "@switchboard", "@switchboard", "what now?"]
            assert content_errors(caplog) == []
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []
