"""Slash commands registered per guild after an earlier global registration (`command_guilds` set since):
the real discord.py client against the loopback fake (`platforms.discord_commands.sync`)."""

from __future__ import annotations

import logging

import pytest

from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD = 900
COMMANDS = [CommandSpec("agents", "List running subagents")]

fake = fake_discord()


async def _sink(inbound: Inbound) -> None:
    pass


async def _start_and_stop(fake: FakeDiscord, guilds: tuple[int, ...]) -> None:
    adapter = adapter_for(fake, command_guilds=guilds)
    await adapter.start(_sink, COMMANDS)
    await adapter.stop()
    await join_heartbeat_threads()


async def test_registering_per_guild_removes_the_global_commands_an_earlier_start_left(fake: FakeDiscord) -> None:
    """Left, they showed in every server and DM, and each use failed ("did not respond"): nothing serves them."""
    await _start_and_stop(fake, ())
    assert [c["name"] for c in fake.commands[None]] == ["agents"]
    await _start_and_stop(fake, (GUILD,))
    assert [c["name"] for c in fake.commands[str(GUILD)]] == ["agents"]
    assert fake.commands[None] == []


async def test_per_guild_leaves_an_empty_global_scope_alone(fake: FakeDiscord) -> None:
    await _start_and_stop(fake, (GUILD,))
    await _start_and_stop(fake, (GUILD,))
    assert [c.path for c in fake.calls if c.method == "PUT"] == \
        [f"/applications/{fake.application_id}/guilds/{GUILD}/commands"] * 2
    assert None not in fake.commands


async def test_a_global_scope_that_cannot_be_emptied_is_logged_and_the_guild_commands_stay(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    await _start_and_stop(fake, ())
    fake.fail_next("PUT /applications/{application_id}/commands", 403, code=50001, message="Missing Access")
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        await _start_and_stop(fake, (GUILD,))
    assert [c["name"] for c in fake.commands[str(GUILD)]] == ["agents"]
    assert "could not remove the global slash commands" in caplog.text
