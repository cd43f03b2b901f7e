"""The kinds of channel a server admin may add the bot to, as Discord sends them (`FakeDiscord.add_channel`):
voice and stage text chats, announcement channels and their threads, forum and media posts, private threads
and archived ones. In each, a mention is taken into the right session, answered there as a reply, with typing
and `/stop`; and what was said there while the adapter was down is read back at the next start."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import CommandSpec, Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import ANNOUNCEMENT, FORUM, MEDIA, STAGE, VOICE, FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads, running_discord

GUILD, USER = 500, 42
TYPING = "POST /channels/{channel_id}/typing"

fake = fake_discord()
running = running_discord(commands=(CommandSpec("stop", "Stop the current turn"),))
Running = tuple[DiscordAdapter, list[Inbound]]


async def answered(fake: FakeDiscord, adapter: DiscordAdapter, inbound: Inbound, where: str) -> None:
    """The answer to ``inbound`` lands in ``where`` as a reply to it, after typing shown there."""
    await adapter.typing(inbound.chat_id, inbound.thread_id)
    await adapter.send(Outbound(chat_id=inbound.chat_id, thread_id=inbound.thread_id, text="answer",
                                reply_to=inbound.message_id, idempotency_key=f"k{len(fake.calls)}"))
    assert [(m.content, m.reply_to) for m in fake.bot_messages(where)] == [("answer", inbound.message_id)]
    assert fake.calls_to(TYPING)[-1].path.endswith(f"/channels/{where}/typing")


@pytest.mark.parametrize("kind", [VOICE, STAGE, ANNOUNCEMENT])
async def test_a_mention_in_a_voice_stage_or_announcement_channel_is_answered_there(
        fake: FakeDiscord, running: Running, kind: int) -> None:
    adapter, got = running
    fake.add_channel(GUILD, 700, kind)
    fake.push_guild_message(GUILD, 700, USER, "hello", mention_bot=True)
    inbound = await fake.wait_for(lambda: got and got[-1])
    assert (inbound.chat_id, inbound.thread_id, inbound.text) == ("700", None, "hello")
    await answered(fake, adapter, inbound, "700")


async def test_an_announcement_channels_thread_is_a_session_of_its_own(fake: FakeDiscord, running: Running) -> None:
    adapter, got = running
    fake.add_channel(GUILD, 700, ANNOUNCEMENT)
    fake.push_guild_message(GUILD, 700, USER, "in the thread", mention_bot=True, thread_id=701)
    inbound = await fake.wait_for(lambda: got and got[-1])
    assert fake._guilds[str(GUILD)]["threads"]["701"]["type"] == 10  # ANNOUNCEMENT_THREAD
    assert (inbound.chat_id, inbound.thread_id) == ("700", "701")
    await answered(fake, adapter, inbound, "701")


@pytest.mark.parametrize("kind", [FORUM, MEDIA])
async def test_a_forum_or_media_post_is_answered_in_the_post_and_its_follow_ups_heard(
        fake: FakeDiscord, running: Running, kind: int) -> None:
    adapter, got = running
    fake.add_channel(GUILD, 800, kind)
    post = fake.push_guild_message(GUILD, 800, USER, "how do I…?", mention_bot=True)  # opens a post
    inbound = await fake.wait_for(lambda: got and got[-1])
    assert (inbound.chat_id, inbound.thread_id, inbound.message_id) == ("800", post, post)
    await answered(fake, adapter, inbound, post)  # a reply to the post's first message, in the post
    fake.push_guild_message(GUILD, 800, USER, "and then?", thread_id=post)
    follow_up = await fake.wait_for(lambda: got[-1].text == "and then?" and got[-1])
    assert (follow_up.chat_id, follow_up.thread_id) == ("800", post)
    fake.push_interaction("stop", USER, channel=post, guild=GUILD)
    stop = await fake.wait_for(lambda: got[-1].is_command and got[-1])
    assert (stop.chat_id, stop.thread_id, stop.text) == ("800", post, "/stop")


async def test_a_forum_channel_itself_takes_no_message(fake: FakeDiscord, running: Running) -> None:
    # What Discord answers a post in the forum itself: the fake must not let a misrouted answer pass.
    adapter, _ = running
    fake.add_channel(GUILD, 800, FORUM)
    with pytest.raises(Exception, match="50008"):
        await adapter.send(Outbound(chat_id="800", thread_id=None, text="lost", idempotency_key="k1"))


async def test_a_private_thread_is_heard_once_a_mention_adds_the_bot(fake: FakeDiscord, running: Running) -> None:
    adapter, got = running
    fake.push_guild_message(GUILD, 600, USER, "among ourselves", thread_id=601, private_thread=True)
    fake.push_guild_message(GUILD, 600, USER, "bot, help", mention_bot=True, thread_id=601)
    inbound = await fake.wait_for(lambda: got and got[-1])
    assert [(e.chat_id, e.thread_id, e.text) for e in got] == [("600", "601", "bot, help")]  # not "added the bot"
    await answered(fake, adapter, inbound, "601")
    fake.push_guild_message(GUILD, 600, USER, "thanks; and?", thread_id=601)
    await fake.wait_for(lambda: got[-1].text == "thanks; and?")
    fake.push_interaction("stop", USER, channel=601, guild=GUILD)
    stop = await fake.wait_for(lambda: got[-1].is_command and got[-1])
    assert (stop.chat_id, stop.thread_id) == ("600", "601")


async def test_a_message_unarchiving_the_bots_thread_is_heard_in_that_thread(
        fake: FakeDiscord, running: Running) -> None:
    adapter, got = running
    fake.push_guild_message(GUILD, 600, USER, "start", mention_bot=True, thread_id=601)
    inbound = await fake.wait_for(lambda: got and got[-1])
    await answered(fake, adapter, inbound, "601")
    fake.archive_thread(601)
    fake.push_guild_message(GUILD, 600, USER, "back again, no mention", thread_id=601)
    back = await fake.wait_for(lambda: got[-1].text == "back again, no mention" and got[-1])
    assert (back.chat_id, back.thread_id) == ("600", "601")


async def test_a_post_and_an_archived_thread_are_read_back_after_a_restart(fake: FakeDiscord) -> None:
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    fake.add_channel(GUILD, 800, FORUM)
    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        post = fake.push_guild_message(GUILD, 800, USER, "a post", mention_bot=True)
        fake.push_guild_message(GUILD, 600, USER, "a thread", mention_bot=True, thread_id=601)
        await fake.wait_for(lambda: len(got) == 2)
        for inbound in got:
            await adapter.send(Outbound(chat_id=inbound.chat_id, thread_id=inbound.thread_id, text="answer",
                                        idempotency_key=f"k{inbound.event_id}"))
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    fake.push_guild_message(GUILD, 800, USER, "while down, in the post", thread_id=post)
    fake.push_guild_message(GUILD, 600, USER, "while down, in the thread", thread_id=601)
    fake.archive_thread(post)
    fake.archive_thread(601)
    await adapter.start(sink)
    try:
        await fake.wait_for(lambda: len(got) == 4)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert sorted((e.chat_id, e.thread_id, e.text) for e in got[2:]) == [
        ("600", "601", "while down, in the thread"), ("800", post, "while down, in the post")]
