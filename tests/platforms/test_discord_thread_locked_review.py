"""Review probes of `platforms.discord_locked` with real discord.py against `FakeDiscord`."""

from __future__ import annotations

from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Outbound, OutboundFile
from platforms.fakes.discord import FORUM
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing

GUILD, CHANNEL, THREAD, BOB = 500, 600, 800, 42
FORUM_CHANNEL = 620

fake = fake_discord()


def answer(chat, thread, asked, text="about 3 MB", key="turn-1/0", kind="reply") -> Outbound:
    return Outbound(chat_id=str(chat), thread_id=str(thread), text=text, kind=kind, idempotency_key=key,
                    reply_to=asked)


async def test_an_answer_in_a_locked_private_thread_is_not_posted_in_the_public_channel(fake):
    try:
        async with losing(adapter_for(fake)) as (adapter, _, sink):
            fake.push_guild_message(GUILD, CHANNEL, BOB, "my salary is…", thread_id=THREAD, private_thread=True)
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "bot, help", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            fake.lock_thread(THREAD)
            with pytest.raises(Exception):
                await adapter.send(answer(CHANNEL, THREAD, asked, "your salary is low"))
            assert fake.bot_messages(CHANNEL) == []  # everyone in the channel would read it
    finally:
        await join_heartbeat_threads()


async def test_an_answer_in_a_locked_forum_post_fails_as_before(fake):
    try:
        async with losing(adapter_for(fake)) as (adapter, lost, sink):
            fake.add_channel(GUILD, FORUM_CHANNEL, FORUM)
            post = fake.push_guild_message(GUILD, FORUM_CHANNEL, BOB, "a post", mention_bot=True)
            await fake.wait_for(lambda: sink.inbound)
            fake.lock_thread(post)
            with pytest.raises(Exception, match="50083"):
                await adapter.send(answer(FORUM_CHANNEL, post, post))
            assert lost.told == []
    finally:
        await join_heartbeat_threads()


async def test_a_file_whose_caption_fits_alone_still_goes_when_moved(fake, tmp_path: Path):
    try:
        async with losing(adapter_for(fake)) as (adapter, _, sink):
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "q?", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            fake.lock_thread(THREAD)
            path = tmp_path / "r.txt"
            path.write_bytes(b"n")
            await adapter.send_file(answer(CHANNEL, THREAD, asked, "c" * 1990), OutboundFile(str(path), "r.txt", 1))
            [moved] = fake.bot_messages(CHANNEL)
            assert moved.attachments[0]["filename"] == "r.txt"
    finally:
        await join_heartbeat_threads()


@pytest.mark.parametrize("unlocked", [False, True])
async def test_a_moved_part_sent_again_by_a_restarted_adapter_is_one_message(fake, unlocked):
    """As after a SIGKILL between the post and its journaling: the new process heard nothing of it."""
    try:
        async with losing(adapter_for(fake)) as (adapter, _, sink):
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "q?", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            fake.lock_thread(THREAD)
            first = await adapter.send(answer(CHANNEL, THREAD, asked))
        if unlocked:
            fake.lock_thread(THREAD, locked=False)
        async with losing(adapter_for(fake)) as (adapter, _, sink):
            assert await adapter.find_sent(answer(CHANNEL, THREAD, asked), 0.0) is None  # nothing heard
            again = await adapter.send(answer(CHANNEL, THREAD, asked))
        assert again.message_id == first.message_id
        assert len(fake.bot_messages(CHANNEL)) + len(fake.bot_messages(THREAD)) == 1
    finally:
        await join_heartbeat_threads()
