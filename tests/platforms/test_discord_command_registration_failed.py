"""Slash commands Discord did not register: the log says what to do by the failure's kind, not always to invite
the bot with the applications.commands scope (`platforms.discord_commands.sync`), the real discord.py client
against the loopback fake."""

from __future__ import annotations

import logging

import pytest

from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD = 900
GLOBAL = "PUT /applications/{application_id}/commands"
COMMANDS = [CommandSpec("agents", "List running subagents"), CommandSpec("usage", "Token usage")]
SCOPE_HINT = "applications.commands scope"

fake = fake_discord()


async def _sink(inbound: Inbound) -> None:
    pass


async def _not_registered(fake: FakeDiscord, caplog: pytest.LogCaptureFixture, guilds: tuple[int, ...] = ()) -> str:
    """The line logged for the commands a start did not register."""
    adapter = adapter_for(fake, command_guilds=guilds)
    with caplog.at_level(logging.ERROR, logger="platforms.discord"):
        await adapter.start(_sink, COMMANDS)
    await adapter.stop()
    await join_heartbeat_threads()
    [line] = [r.getMessage() for r in caplog.records if "slash commands not registered" in r.getMessage()]
    return line


async def test_a_refusal_for_want_of_the_scope_names_the_scope_and_the_guild(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next("PUT /applications/{application_id}/guilds/{guild_id}/commands", 403, code=50001,
                   message="Missing Access")
    line = await _not_registered(fake, caplog, (GUILD,))
    assert f"not registered in guild {GUILD}" in line
    assert SCOPE_HINT in line


async def test_a_rate_limit_is_said_to_pass_not_to_want_the_scope(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """A 429 discord.py does not wait out (no ``Via``: Cloudflare's or a proxy's) raises from the sync."""
    fake.fail_next(GLOBAL, 429, headers={"Retry-After": "30"})
    line = await _not_registered(fake, caplog)
    assert "(rate limited" in line or "429" in line
    assert SCOPE_HINT not in line
    assert "registered again at the next start" in line
    assert fake.commands == {}


async def test_a_network_error_is_said_to_pass_not_to_want_the_scope(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """A reset (aiohttp sends the PUT once more on a new connection by itself: two to fail it)."""
    fake.fail_next(GLOBAL, drop=True, times=2)
    line = await _not_registered(fake, caplog)
    assert SCOPE_HINT not in line
    assert "registered again at the next start" in line
    assert fake.commands == {}


async def test_a_refused_definition_names_the_command_discord_refused(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    refused = {"description": {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH",
                                            "message": "Must be between 1 and 100 in length."}]}}
    fake.fail_next(GLOBAL, 400, code=50035, message="Invalid Form Body", errors={"1": refused})
    line = await _not_registered(fake, caplog)
    assert SCOPE_HINT not in line
    assert "Discord refused the definition of /usage;" in line


async def test_a_refused_definition_naming_no_command_says_a_command(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """Discord's refusal of the list as a whole (two commands of one name) points at none of them."""
    duplicate = [{"code": "APPLICATION_COMMANDS_DUPLICATE_NAME", "message": "Application command names must be unique"}]
    fake.fail_next(GLOBAL, 400, code=50035, message="Invalid Form Body", errors={"_errors": duplicate})
    line = await _not_registered(fake, caplog)
    assert SCOPE_HINT not in line
    assert "Discord refused the definition of a command;" in line


async def test_any_other_failure_says_the_text_commands_still_work(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """A guild in ``command_guilds`` that Discord does not know (a mistyped id)."""
    fake.fail_next("PUT /applications/{application_id}/guilds/{guild_id}/commands", 404, code=10004,
                   message="Unknown Guild")
    line = await _not_registered(fake, caplog, (GUILD,))
    assert SCOPE_HINT not in line
    assert "the text commands (such as !stop) still work" in line
