"""Asking Discord which thread a message's channel is (`DiscordAdapter._in_thread`) is bounded by
``thread_lookup_timeout``: every chat's events wait behind that one call, and a Discord slow to answer it (or
answering 5xx, which discord.py retries) held them all for the 30 s of the REST timeout, or longer. Past the bound
the message is answered as the channel's own, with one warning. Real discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Inbound
from platforms.discord import THREAD_LOOKUP_TIMEOUT
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.test_discord_chat_lost import GUILD, MARKER, THREAD, THREADED, USER
from tests.platforms.test_discord_unheld_thread import GET_CHANNEL, NEW, key, unheld

BOUND = 0.05
WARNING = f"Discord did not say within {BOUND:g} s whether channel {NEW} is a thread"

fake = fake_discord()


@pytest.fixture
async def got(fake: FakeDiscord) -> AsyncIterator[list[Inbound]]:
    """What an adapter whose thread lookups are given ``BOUND`` seconds handed over, once it has heard a mention
    in ``THREAD`` and a message (not to it) in ``NEW``, a thread it then forgets."""
    try:
        async with losing(adapter_for(fake, thread_lookup_timeout=BOUND)) as (_, _, sink):
            fake.push_guild_message(GUILD, THREADED, USER, "in a thread", mention_bot=True, thread_id=THREAD)
            fake.push_guild_message(GUILD, THREADED, USER, "not to the bot", thread_id=NEW)
            await fake.wait_for(lambda: len(sink.inbound) == 1)
            yield sink.inbound
    finally:
        await join_heartbeat_threads()


async def test_a_discord_that_does_not_answer_holds_the_other_chats_no_longer_than_the_bound(fake, got, caplog):
    release = fake.hold(GET_CHANNEL)
    try:
        unheld(fake, NEW, "first")
        await fake.wait_for(lambda: fake.calls_to(GET_CHANNEL))
        fake.push_dm(MARKER, "said after it, elsewhere")
        await fake.wait_for(lambda: len(got) == 3, timeout=2.0)  # 30 s when the lookup had no bound of its own
    finally:
        release.set()
    assert [m.text for m in got[1:]] == ["first", "said after it, elsewhere"]
    assert key(got[1]) == (str(NEW), None)  # heard, as the channel's own
    assert caplog.text.count(WARNING) == 1


async def test_server_errors_discord_py_retries_are_cut_short_by_the_bound(fake, got, caplog):
    fake.fail_next(GET_CHANNEL, 502, times=5)  # discord.py tries again after 1, 3, 5 and 7 s
    unheld(fake, NEW, "first")
    fake.push_dm(MARKER, "said after it, elsewhere")
    await fake.wait_for(lambda: len(got) == 3, timeout=2.0)
    assert key(got[1]) == (str(NEW), None)
    assert len(fake.calls_to(GET_CHANNEL)) == 1
    assert caplog.text.count(WARNING) == 1


def test_discord_is_given_five_seconds_by_default():
    assert THREAD_LOOKUP_TIMEOUT == 5.0
