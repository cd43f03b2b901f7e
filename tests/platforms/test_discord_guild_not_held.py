"""A Discord server message is judged a server's by its payload's ``guild_id``, never as a DM, whether or not
discord.py holds the server: one it does not (a server whose join Discord announced ``unavailable``, which
discord.py discards) comes with no ``message.guild``, and read by that it was a DM, answered without a mention and
marked private. Before a server's ``GUILD_CREATE`` discord.py holds it already, unavailable, from READY. Real
discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

from typing import Any

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.fakes.discord import FakeDiscord, _user
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing

GUILD, CHANNEL, USER = 510, 610, 42

fake = fake_discord()


def said(fake: FakeDiscord, text: str, *, mention: bool) -> dict[str, Any]:
    """A message in ``CHANNEL`` as Discord sends it, with its ``guild_id``, dispatched or not."""
    data = fake._message_payload(str(CHANNEL), str(USER), None, f"<@{fake.bot_id}> {text}" if mention else text,
                                 guild=str(GUILD))
    data["mentions"] = [_user(fake.bot_id, fake.bot_name, bot=True)] if mention else []
    return data


async def test_a_message_of_a_server_discord_py_does_not_hold_is_no_dm(fake, monkeypatch):
    fake.add_channel(GUILD, CHANNEL)
    monkeypatch.setattr(fake, "_member_guilds", lambda: [])  # not in READY: joined after it, during an outage
    try:
        async with losing(adapter_for(fake)) as (_, __, sink):
            fake._dispatch("GUILD_CREATE", {"id": str(GUILD), "unavailable": True})  # discord.py discards it
            fake._dispatch("MESSAGE_CREATE", said(fake, "not for the bot", mention=False))
            fake._dispatch("MESSAGE_CREATE", said(fake, "hello", mention=True))
            await fake.wait_for(lambda: sink.inbound)
            assert [(m.text, m.chat_id, m.thread_id, m.is_private) for m in sink.inbound] == [
                ("hello", str(CHANNEL), None, False)]
    finally:
        await join_heartbeat_threads()


async def test_a_mention_before_its_servers_guild_create_is_the_servers(fake, monkeypatch):
    fake.add_channel(GUILD, CHANNEL)
    dispatch = fake._dispatch

    def early(event: str, data: dict[str, Any], *, only: Any = None) -> dict[str, Any]:
        sent = dispatch(event, data, only=only)
        if event == "READY":  # between READY, which lists the server unavailable, and its GUILD_CREATE
            dispatch("MESSAGE_CREATE", said(fake, "not for the bot", mention=False), only=only)
            dispatch("MESSAGE_CREATE", said(fake, "early", mention=True), only=only)
        return sent

    monkeypatch.setattr(fake, "_dispatch", early)
    try:
        async with losing(adapter_for(fake)) as (_, __, sink):
            await fake.wait_for(lambda: sink.inbound)
            assert [(m.text, m.chat_id, m.is_private) for m in sink.inbound] == [("early", str(CHANNEL), False)]
    finally:
        await join_heartbeat_threads()
