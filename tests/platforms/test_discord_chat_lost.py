"""The bot removed from a server, a channel deleted, a DM's user blocking the bot: `DiscordAdapter` (real discord.py
against the loopback `FakeDiscord`) tells the gateway once that it can no longer write to the chat
(`platforms.base.LosesChats`), by Discord's gateway event or, when that was missed, by a write Discord refuses so;
a server's outage (``GUILD_DELETE`` with ``unavailable``) tells nothing, and a deleted thread that thread alone
(`tests.platforms.test_discord_thread_lost`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, NotFound, Outbound
from platforms.discord import DiscordAdapter
from platforms.discord_membership import DELETED, REFUSED, REFUSED_IN_THREAD, REMOVED, THREAD_DELETED
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink

GUILD, TALKED, THREADED, QUIET, THREAD = 500, 600, 601, 602, 800
OTHER_GUILD, ELSEWHERE = 700, 701
USER, MARKER = 42, 43
NO_ACCESS, NO_DMS = REFUSED[50001], REFUSED[50007]

fake = fake_discord()


@pytest.fixture
async def started(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Lost, Sink]]:
    """An adapter that has heard a mention in two channels of ``GUILD`` (one in a thread) and one of another."""
    fake.add_channel(GUILD, QUIET)
    try:
        async with losing(adapter_for(fake)) as (adapter, lost, sink):
            fake.push_guild_message(GUILD, TALKED, USER, "hi", mention_bot=True)
            fake.push_guild_message(GUILD, THREADED, USER, "in a thread", mention_bot=True, thread_id=THREAD)
            fake.push_guild_message(OTHER_GUILD, ELSEWHERE, USER, "hello", mention_bot=True)
            await fake.wait_for(lambda: len(sink.inbound) == 3)
            yield adapter, lost, sink
    finally:
        await join_heartbeat_threads()


async def settled(fake: FakeDiscord, sink: Sink) -> None:
    """Until a DM sent now is handed over: what was queued before it (a loss, a return) was told by then."""
    count = len(sink.inbound)
    fake.push_dm(MARKER, "marker")
    await fake.wait_for(lambda: len(sink.inbound) > count)


def reply(chat: int, text: str = "an answer", thread: int | None = None) -> Outbound:
    return Outbound(chat_id=str(chat), thread_id=None if thread is None else str(thread), text=text)


async def test_the_bot_removed_from_a_server_tells_each_chat_there_once(fake, started):
    adapter, lost, sink = started
    fake.remove_bot(GUILD)
    await fake.wait_for(lambda: len(lost.told) == 2)
    # The channels the gateway talked in, a thread's by its channel; not the quiet one, nor another server's.
    assert sorted(lost.told) == [(str(TALKED), REMOVED), (str(THREADED), REMOVED)]
    for message in (reply(TALKED), reply(THREADED), reply(THREADED, thread=THREAD)):
        with pytest.raises(Forbidden, match="50001"):
            await adapter.send(message)  # refused as closed: told already
    await settled(fake, sink)
    assert len(lost.told) == 2

    fake.add_bot(GUILD)  # invited back: a later removal is told again
    await settled(fake, sink)
    assert (await adapter.send(reply(TALKED))).message_id
    fake.remove_bot(GUILD, update=False)  # while no session was valid: only the refusals tell
    with pytest.raises(Forbidden):
        await adapter.typing(str(TALKED), None)
    await fake.wait_for(lambda: len(lost.told) == 3)
    assert lost.told[2] == (str(TALKED), NO_ACCESS)


async def test_an_outage_of_a_server_stops_nothing(fake, started):
    adapter, lost, sink = started
    fake.outage(GUILD)  # GUILD_DELETE with unavailable: true
    client = adapter._client
    await fake.wait_for(lambda: client.get_guild(GUILD) is not None and client.get_guild(GUILD).unavailable)
    await settled(fake, sink)
    fake.outage_over(GUILD)
    await fake.wait_for(lambda: not client.get_guild(GUILD).unavailable)
    fake.push_guild_message(GUILD, TALKED, USER, "still there?", mention_bot=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "still there?")
    assert lost.told == []
    assert (await adapter.send(reply(TALKED))).message_id


async def test_a_deleted_channel_is_told_and_a_deleted_thread_with_its_thread(fake, started):
    adapter, lost, sink = started
    # A thread is told with its thread: told by its channel alone, it would stop every other thread's work too.
    fake.delete_channel(THREAD)
    fake.delete_channel(QUIET)  # no chat of the gateway's
    fake.delete_channel(TALKED)
    await fake.wait_for(lambda: len(lost.told) == 2)
    await settled(fake, sink)
    assert lost.told == [(str(THREADED), THREAD_DELETED, str(THREAD)), (str(TALKED), DELETED)]
    with pytest.raises(NotFound, match="10003"):
        await adapter.send(reply(TALKED))
    await settled(fake, sink)
    assert len(lost.told) == 2


async def test_a_write_refused_as_the_chat_closed_tells_it_once_when_the_event_was_missed(fake, started):
    adapter, lost, sink = started
    fake.deny(TALKED, "view_channel")  # the channel hidden from the bot: Discord sends no event the bot reads
    with pytest.raises(Forbidden):
        await adapter.typing(str(TALKED), None)
    for text in ("first part", "second part"):
        with pytest.raises(Forbidden):
            await adapter.send(reply(TALKED, text))
    fake.fail_next(f"POST /channels/{ELSEWHERE}/messages", 404, code=10003, message="Unknown Channel")
    with pytest.raises(NotFound):
        await adapter.send(reply(ELSEWHERE))
    await fake.wait_for(lambda: len(lost.told) == 2)
    assert lost.told == [(str(TALKED), NO_ACCESS), (str(ELSEWHERE), DELETED)]
    # A thread's is the loss of that thread alone (its channel's other threads go on); a lacking right is none.
    fake.deny(THREAD, "view_channel")
    fake.deny(THREADED, "send_messages")
    with pytest.raises(Forbidden):
        await adapter.send(reply(THREADED, thread=THREAD))
    with pytest.raises(Forbidden, match="50013"):
        await adapter.send(reply(THREADED))
    await settled(fake, sink)
    assert lost.told[2:] == [(str(THREADED), REFUSED_IN_THREAD[50001], str(THREAD))]
    # Someone writes there (the channel shown again), then it is hidden again: told again.
    fake.allow(TALKED, "view_channel")
    fake.push_guild_message(GUILD, TALKED, USER, "back?", mention_bot=True)
    await fake.wait_for(lambda: sink.inbound[-1].text == "back?")
    fake.deny(TALKED, "view_channel")
    with pytest.raises(Forbidden):
        await adapter.edit(str(TALKED), None, "1", "edited")
    await fake.wait_for(lambda: len(lost.told) == 4)
    assert lost.told[3] == (str(TALKED), NO_ACCESS)


async def test_a_user_who_blocks_the_bot_in_a_dm(fake, started):
    adapter, lost, sink = started
    dm = fake.dm_channel(USER)
    fake.block_dm(USER)
    with pytest.raises(Forbidden, match="50007"):
        await adapter.send(reply(int(dm)))
    await fake.wait_for(lambda: lost.told)
    assert lost.told == [(dm, NO_DMS)]
    fake.unblock_dm(USER)
    fake.push_dm(USER, "I am back")  # handed over: a later block is told again
    await fake.wait_for(lambda: sink.inbound[-1].text == "I am back")
    assert (await adapter.send(reply(int(dm)))).message_id
    fake.block_dm(USER)
    with pytest.raises(Forbidden):
        await adapter.send(reply(int(dm)))
    await fake.wait_for(lambda: len(lost.told) == 2)


async def test_a_removal_the_store_refused_is_told_at_the_next_refusal(fake, started, caplog):
    adapter, lost, sink = started
    lost.refuse = 1
    fake.remove_bot(OTHER_GUILD)
    await fake.wait_for(lambda: any("could not stop the work of chat" in r.getMessage() for r in caplog.records
                                    if r.levelno == logging.WARNING))
    assert lost.told == []
    with pytest.raises(Forbidden):
        await adapter.send(reply(ELSEWHERE))
    await fake.wait_for(lambda: lost.told)
    assert lost.told == [(str(ELSEWHERE), NO_ACCESS)]


async def test_a_hidden_channel_stays_lost_through_an_outage_of_its_server(fake, started, caplog):
    adapter, lost, sink = started
    caplog.set_level(logging.INFO, logger="platforms.discord")
    fake.deny(TALKED, "view_channel")
    with pytest.raises(Forbidden):
        await adapter.send(reply(TALKED))
    await fake.wait_for(lambda: lost.told)
    fake.outage(GUILD)  # then GUILD_CREATE, as at every new session: the channel is no more writable for it
    client = adapter._client
    await fake.wait_for(lambda: client.get_guild(GUILD) is not None and client.get_guild(GUILD).unavailable)
    fake.outage_over(GUILD)
    await fake.wait_for(lambda: not client.get_guild(GUILD).unavailable)
    await settled(fake, sink)
    with pytest.raises(Forbidden):
        await adapter.send(reply(TALKED, "a later part"))
    await settled(fake, sink)
    assert lost.told == [(str(TALKED), NO_ACCESS)]
    assert not [r for r in caplog.records if "may write to chat" in r.getMessage()]
