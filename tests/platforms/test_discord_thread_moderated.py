"""A private Discord thread the bot was removed from (``THREAD_MEMBERS_UPDATE``) is no loss while the bot manages
threads in its channel (Manage Threads there, or Administrator): a moderator reads and writes every private thread,
member or not, so its work goes on. Real discord.py against the loopback `FakeDiscord`. Where the permission cannot
be known, nothing stops either: the first write Discord refuses tells the loss (`platforms.discord_membership`)."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden
from platforms.discord_membership import REFUSED_IN_THREAD, THREAD_LEFT
from tests.discord_client import fake_discord
from tests.platforms import test_discord_chat_lost as channel_lost
from tests.platforms.test_discord_chat_lost import GUILD, THREADED, USER, reply, settled

PRIVATE, ORPHAN, UNHELD = 810, 812, 613
NO_ACCESS_HERE = REFUSED_IN_THREAD[50001]

fake = fake_discord()
started = channel_lost.started


async def in_private_thread(fake, sink) -> None:
    fake.push_guild_message(GUILD, THREADED, USER, "psst", mention_bot=True, thread_id=PRIVATE, private_thread=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "psst")


async def test_removed_from_a_private_thread_it_manages_the_bot_goes_on(fake, started):
    adapter, lost, sink = started
    await in_private_thread(fake, sink)
    fake.manage_threads(THREADED)
    fake.remove_from_thread(PRIVATE)
    await settled(fake, sink)
    assert lost.told == []
    assert (await adapter.send(reply(THREADED, thread=PRIVATE))).message_id

    fake.manage_threads(THREADED, allow=False)  # taken back: the next write refused tells the loss
    with pytest.raises(Forbidden, match="50001"):
        await adapter.send(reply(THREADED, thread=PRIVATE))
    await fake.wait_for(lambda: lost.told)
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), NO_ACCESS_HERE, str(PRIVATE))]


async def test_an_administrator_removed_from_a_private_thread_goes_on(fake, started):
    adapter, lost, sink = started
    await in_private_thread(fake, sink)
    fake.make_admin(GUILD)
    fake.remove_from_thread(PRIVATE)
    await settled(fake, sink)
    assert lost.told == []
    assert (await adapter.send(reply(THREADED, thread=PRIVATE))).message_id


async def test_without_manage_threads_the_loss_is_told_at_once(fake, started):
    adapter, lost, sink = started
    await in_private_thread(fake, sink)
    fake.manage_threads(THREADED)
    fake.manage_threads(THREADED, allow=False)
    fake.remove_from_thread(PRIVATE)
    await fake.wait_for(lambda: lost.told)
    assert lost.told == [(str(THREADED), THREAD_LEFT, str(PRIVATE))]


async def test_a_permission_that_cannot_be_known_stops_nothing_until_a_write_is_refused(fake, started):
    """A private thread whose channel discord.py does not hold: whether the bot manages threads there is unknown.
    Stopped, work it could finish would be lost; gone on, its first write refused tells the loss all the same."""
    adapter, lost, sink = started
    fake._ensure_thread(str(GUILD), str(THREADED), str(ORPHAN), str(USER), private=True)
    data = fake._guilds[str(GUILD)]["threads"][str(ORPHAN)]
    data["member"] = {"id": str(ORPHAN), "user_id": fake.bot_id, "join_timestamp": data["thread_metadata"][
        "archive_timestamp"], "flags": 0}
    fake._dispatch("THREAD_CREATE", data | {"parent_id": str(UNHELD)})  # as discord.py hears it: no channel it holds
    adapter.remember_threads([(str(THREADED), str(ORPHAN))])  # a thread session the gateway stored
    fake.remove_from_thread(ORPHAN)
    await settled(fake, sink)
    assert lost.told == []
    with pytest.raises(Forbidden, match="50001"):
        await adapter.send(reply(THREADED, thread=ORPHAN))
    await fake.wait_for(lambda: lost.told)
    assert lost.told == [(str(THREADED), NO_ACCESS_HERE, str(ORPHAN))]
