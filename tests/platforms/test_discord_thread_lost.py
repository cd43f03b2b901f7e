"""A Discord thread the bot can no longer write in: `DiscordAdapter` (real discord.py against the loopback
`FakeDiscord`) tells the gateway once, with that thread (`platforms.base.ChatLost`), so that the thread's work stops
and no other: deleted (``THREAD_DELETE``), a private one the bot was removed from (``THREAD_MEMBERS_UPDATE``), or,
the event missed, a write there refused 50001 or 10003. A public thread the bot left, a thread it never talked in,
or a thread of a channel told lost already tells nothing."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, NotFound
from platforms.discord_membership import REMOVED, THREAD_DELETED, THREAD_LEFT
from tests.discord_client import fake_discord
from tests.platforms import test_discord_chat_lost as channel_lost
from tests.platforms.test_discord_chat_lost import GUILD, TALKED, THREAD, THREADED, USER, reply, settled

PRIVATE, QUIET_THREAD = 810, 811
NO_ACCESS_HERE = "the bot has no access to the thread"

fake = fake_discord()
started = channel_lost.started


async def test_a_deleted_thread_is_told_once_with_its_thread(fake, started):
    adapter, lost, sink = started
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=QUIET_THREAD)
    fake.delete_channel(QUIET_THREAD)  # never talked in: nothing to stop
    fake.delete_channel(THREAD)
    await fake.wait_for(lambda: lost.told)
    for text in ("first part", "second part"):
        with pytest.raises(NotFound, match="10003"):
            await adapter.send(reply(THREADED, text, thread=THREAD))
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), THREAD_DELETED, str(THREAD))]


async def test_the_bot_removed_from_a_private_thread(fake, started):
    adapter, lost, sink = started
    fake.push_guild_message(GUILD, THREADED, USER, "psst", mention_bot=True, thread_id=PRIVATE, private_thread=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "psst")
    fake.remove_from_thread(THREAD)  # a public one: the bot may still post there
    fake.remove_from_thread(PRIVATE)
    await fake.wait_for(lambda: lost.told)
    with pytest.raises(Forbidden, match="50001"):
        await adapter.send(reply(THREADED, thread=PRIVATE))
    assert (await adapter.send(reply(THREADED, thread=THREAD))).message_id
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), THREAD_LEFT, str(PRIVATE))]

    fake.push_guild_message(GUILD, THREADED, USER, "come back", mention_bot=True, thread_id=PRIVATE)  # adds it
    await fake.wait_for(lambda: sink.inbound[-1].text == "come back")
    assert (await adapter.send(reply(THREADED, thread=PRIVATE))).message_id
    fake.remove_from_thread(PRIVATE)  # removed again: told again
    await fake.wait_for(lambda: len(lost.told) == 2)
    assert lost.told[1] == (str(THREADED), THREAD_LEFT, str(PRIVATE))


async def test_a_write_refused_in_a_thread_tells_it_once_when_the_event_was_missed(fake, started):
    adapter, lost, sink = started
    fake.push_guild_message(GUILD, THREADED, USER, "psst", mention_bot=True, thread_id=PRIVATE, private_thread=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "psst")
    fake.remove_from_thread(PRIVATE, update=False)
    with pytest.raises(Forbidden):
        await adapter.typing(str(THREADED), str(PRIVATE))
    for text in ("first part", "second part"):
        with pytest.raises(Forbidden, match="50001"):
            await adapter.send(reply(THREADED, text, thread=PRIVATE))
    await fake.wait_for(lambda: lost.told)
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), NO_ACCESS_HERE, str(PRIVATE))]


async def test_a_thread_of_a_channel_told_lost_is_not_told_again(fake, started):
    adapter, lost, sink = started
    fake.remove_bot(GUILD)  # stops the channel's work, its threads' too
    await fake.wait_for(lambda: len(lost.told) == 2)
    with pytest.raises(Forbidden, match="50001"):
        await adapter.send(reply(THREADED, thread=THREAD))
    await settled(fake, sink)
    assert sorted(lost.told) == [(str(TALKED), REMOVED), (str(THREADED), REMOVED)]
