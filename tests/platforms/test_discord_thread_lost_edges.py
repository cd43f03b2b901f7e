"""Edges of a Discord thread's loss (`platforms.discord_membership`), real discord.py against the loopback
`FakeDiscord`: what is no loss of a thread tells nothing (an archived thread, a member other than the bot removed,
an edit of a message deleted), and what is tells that thread alone with its parent (a forum's post, a thread whose
channel is deleted after it)."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import NotFound
from platforms.discord_membership import DELETED, THREAD_DELETED
from platforms.fakes.discord import FORUM
from tests.discord_client import fake_discord
from tests.platforms import test_discord_chat_lost as channel_lost
from tests.platforms.test_discord_chat_lost import GUILD, THREAD, THREADED, USER, reply, settled

PRIVATE, FORUM_CHANNEL = 810, 620

fake = fake_discord()
started = channel_lost.started


async def test_an_archived_thread_is_no_loss(fake, started):
    adapter, lost, sink = started
    fake.archive_thread(THREAD)  # THREAD_UPDATE archived: discord.py forgets the thread
    await settled(fake, sink)
    assert (await adapter.send(reply(THREADED, thread=THREAD))).message_id
    await adapter.typing(str(THREADED), str(THREAD))
    await settled(fake, sink)
    assert lost.told == []


async def test_another_member_removed_from_a_private_thread_is_no_loss(fake, started):
    adapter, lost, sink = started
    fake.push_guild_message(GUILD, THREADED, USER, "psst", mention_bot=True, thread_id=PRIVATE, private_thread=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "psst")
    fake._dispatch("THREAD_MEMBERS_UPDATE", {"id": str(PRIVATE), "guild_id": str(GUILD), "member_count": 1,
                                             "removed_member_ids": [str(USER)]})
    await settled(fake, sink)
    assert lost.told == []


async def test_an_edit_of_a_deleted_message_in_a_thread_is_no_loss(fake, started):
    adapter, lost, sink = started
    with pytest.raises(NotFound, match="10008"):
        await adapter.edit(str(THREADED), str(THREAD), "123456", "edited")
    await settled(fake, sink)
    assert lost.told == []


async def test_a_thread_deleted_then_its_channel(fake, started):
    adapter, lost, sink = started
    fake.delete_channel(THREAD)
    await fake.wait_for(lambda: lost.told)
    fake.delete_channel(THREADED)
    await fake.wait_for(lambda: len(lost.told) == 2)
    with pytest.raises(NotFound, match="10003"):
        await adapter.edit(str(THREADED), str(THREAD), "1", "edited")
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), THREAD_DELETED, str(THREAD)), (str(THREADED), DELETED)]


async def test_a_forum_post_deleted_is_told_with_the_forum(fake, started):
    adapter, lost, sink = started
    fake.add_channel(GUILD, FORUM_CHANNEL, FORUM)
    fake.push_guild_message(GUILD, FORUM_CHANNEL, USER, "a post", mention_bot=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "a post")
    post = sink.inbound[-1]
    assert post.chat_id == str(FORUM_CHANNEL) and post.thread_id is not None
    fake.delete_channel(post.thread_id)
    await fake.wait_for(lambda: lost.told)
    await settled(fake, sink)
    assert lost.told == [(str(FORUM_CHANNEL), THREAD_DELETED, post.thread_id)]
