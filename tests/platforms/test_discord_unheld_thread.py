"""A message in a thread discord.py does not hold (its channel a PartialMessageable: the thread archived, or never
announced, and the THREAD_UPDATE unarchiving it not heard first) belongs to the same conversation as the thread's
other messages, (parent channel, thread) (`platforms.discord_inbound.chat_of`): by the parent the gateway knows the
thread under, else the thread Discord sends (``GET /channels/{id}``) before the message is handed over, in the order
heard. Real discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Inbound
from platforms.fakes.discord import FakeDiscord, _user
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.test_discord_chat_lost import GUILD, MARKER, THREAD, THREADED, USER

STORED, NEW = 820, 821
GET_CHANNEL = "GET /channels/{channel_id}"

fake = fake_discord()


def unheld(fake: FakeDiscord, thread: int, text: str) -> str:
    """A mention in ``thread`` as discord.py hears it when it holds no such thread: archived first, so that
    discord.py forgets it, and the message sent without the THREAD_UPDATE that unarchives it."""
    fake.archive_thread(thread)
    data = fake._message_payload(str(thread), str(USER), None, f"<@{fake.bot_id}> {text}", guild=str(GUILD))
    data["mentions"] = [_user(fake.bot_id, fake.bot_name, bot=True)]
    return fake._dispatch("MESSAGE_CREATE", data)["id"]


def key(inbound: Inbound) -> tuple[str, str | None]:
    return inbound.chat_id, inbound.thread_id


@pytest.fixture
async def started(fake: FakeDiscord) -> AsyncIterator[tuple[list[Inbound], list[tuple[str, ...]]]]:
    """What an adapter handed over, and the edits, once it was told of a stored thread session (``STORED`` of
    ``THREADED``) and has heard a mention in ``THREAD``, also of ``THREADED``."""
    fake.push_guild_message(GUILD, THREADED, USER, "made before the start", thread_id=STORED)
    adapter = adapter_for(fake)
    adapter.remember_threads([(str(THREADED), str(STORED))])
    edits: list[tuple[str, ...]] = []

    async def edited(platform: str, chat: str, thread: str | None, message: str, text: str) -> bool:
        edits.append((chat, str(thread), message, text))
        return True  # taken where it was told: looked for nowhere else

    adapter.bind_edits(edited)
    try:
        async with losing(adapter) as (adapter, _, sink):
            fake.push_guild_message(GUILD, THREADED, USER, "in a thread", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: len(sink.inbound) == 1)
            yield sink.inbound, edits
    finally:
        await join_heartbeat_threads()


async def test_a_thread_the_bot_talked_in_keeps_its_conversation(fake, started):
    got, _ = started
    unheld(fake, THREAD, "again")
    await fake.wait_for(lambda: len(got) == 2)
    assert key(got[1]) == key(got[0]) == (str(THREADED), str(THREAD))
    assert fake.calls_to(GET_CHANNEL) == []


async def test_a_thread_of_a_stored_session_keeps_its_conversation(fake, started):
    got, _ = started
    unheld(fake, STORED, "after the restart")
    await fake.wait_for(lambda: len(got) == 2)
    assert key(got[1]) == (str(THREADED), str(STORED))
    assert fake.calls_to(GET_CHANNEL) == []


async def test_an_unknown_thread_is_asked_for_and_its_messages_stay_in_order(fake, started):
    got, _ = started
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
    release = fake.hold(GET_CHANNEL)
    unheld(fake, NEW, "first")
    await fake.wait_for(lambda: fake.calls_to(GET_CHANNEL))
    fake.push_dm(MARKER, "said after it")
    fake.push_guild_message(GUILD, THREADED, USER, "second", mention_bot=True, thread_id=NEW)  # discord.py holds it
    release.set()
    await fake.wait_for(lambda: len(got) == 4)
    assert [m.text for m in got[1:]] == ["first", "said after it", "second"]
    assert key(got[1]) == key(got[3]) == (str(THREADED), str(NEW))


async def test_an_edit_in_a_thread_not_held_goes_to_its_conversation(fake, started):
    got, edits = started
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
    message = unheld(fake, NEW, "to edit")
    await fake.wait_for(lambda: len(got) == 2)
    fake.edit_message(NEW, message, f"<@{fake.bot_id}> edited")  # discord.py still holds no such thread
    await fake.wait_for(lambda: edits)
    assert key(got[1]) == (str(THREADED), str(NEW))
    assert edits == [(str(THREADED), str(NEW), message, "edited")]


async def test_a_thread_discord_does_not_send_is_answered_as_a_channel(fake, started, caplog):
    got, _ = started
    fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
    fake.fail_next(GET_CHANNEL, 403, code=50001, message="Missing Access")
    unheld(fake, NEW, "still heard")
    await fake.wait_for(lambda: len(got) == 2)
    assert key(got[1]) == (str(NEW), None)
    assert f"could not ask Discord whether channel {NEW} is a thread" in caplog.text
