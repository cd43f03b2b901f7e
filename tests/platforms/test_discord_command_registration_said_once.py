"""A registration of slash commands that Discord refuses is said once, with what to do: a guild of
``command_guilds`` the bot is not in is named as such, and the text commands still work
(`platforms.discord_commands.sync`), the real discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio
import logging

import pytest

from platforms import discord_errors
from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from platforms.repeated_warnings import RepeatedWarnings
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD = 900
USER = 4242
IN_GUILD = "PUT /applications/{application_id}/guilds/{guild_id}/commands"
COMMANDS = [CommandSpec("agents", "List running subagents")]

fake = fake_discord()


async def _start(fake: FakeDiscord, caplog: pytest.LogCaptureFixture, heard: asyncio.Queue[Inbound]) -> list[str]:
    """Start an adapter registering in `GUILD`, hear one ``!stop`` DM, stop; the lines logged at WARNING or above."""
    adapter = adapter_for(fake, command_guilds=(GUILD,))
    with caplog.at_level(logging.DEBUG, logger="platforms.discord"):
        await adapter.start(heard.put, COMMANDS)
        try:
            fake.push_dm(USER, "!stop")
            inbound = await asyncio.wait_for(heard.get(), 5)
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
    assert inbound.text == "!stop"  # the text commands work without the slash ones
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_guild_the_bot_is_not_in_is_named_and_said_once(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next(IN_GUILD, 404, code=10004, message="Unknown Guild")
    lines = await _start(fake, caplog, asyncio.Queue())
    [line] = [line for line in lines if "Unknown Guild" in line]
    assert f"slash commands not registered in guild {GUILD}" in line
    assert f"the bot is not in guild {GUILD} (platforms.discord.command_guilds): invite it there, or remove the id" \
        in line
    assert "the text commands (such as !stop) still work" in line


async def test_a_refusal_is_said_once_naming_the_guild(fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next(IN_GUILD, 403, code=50001, message="Missing Access")
    lines = await _start(fake, caplog, asyncio.Queue())
    [line] = [line for line in lines if "Missing Access" in line]
    assert f"invite the bot to guild {GUILD} with the applications.commands scope" in line


async def test_a_refused_removal_of_global_commands_is_said_once(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next("GET /applications/{application_id}/commands", 403, code=50001, message="Missing Access")
    lines = await _start(fake, caplog, asyncio.Queue())
    [line] = [line for line in lines if "Missing Access" in line]
    assert "could not remove the global slash commands" in line


async def test_a_rate_limit_is_said_once(fake: FakeDiscord, caplog: pytest.LogCaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A 429 discord.py does not wait out (no ``Via``); the outage warnings start afresh, as in a new process."""
    monkeypatch.setattr(discord_errors, "_SHARED", RepeatedWarnings(discord_errors.log))
    fake.fail_next(IN_GUILD, 429, headers={"Retry-After": "30"})
    lines = await _start(fake, caplog, asyncio.Queue())
    [line] = [line for line in lines if "429" in line or "rate limited" in line]
    assert "registered again at the next start" in line
