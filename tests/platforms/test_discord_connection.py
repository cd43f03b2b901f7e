"""DiscordAdapter's connection state (`platforms.connection`): the real discord.py client against
FakeDiscord's gateway, which closes an IDENTIFY with 4004 for a token that was reset and with 4014
for a Message Content intent switched off, as Discord does."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound, Unauthorized
from platforms.connection import Connects
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.platforms.connection_state import status
from tests.platforms.sink import Sink

USER = 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


@pytest.fixture
async def running(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Sink]]:
    adapter, sink = adapter_for(fake), Sink()
    await adapter.start(sink)
    try:
        yield adapter, sink
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_a_dropped_connection_is_reconnecting_until_resumed(fake: FakeDiscord, running) -> None:
    adapter, sink = running
    assert isinstance(adapter, Connects) and adapter.connection().status == "connected"
    fake.drop_socket()
    assert "discord.py reconnects" in await status(adapter, fake, "reconnecting")
    await status(adapter, fake, "connected")
    fake.push_dm(USER, "still there?")
    await fake.wait_for(lambda: sink.inbound)


async def test_a_reset_token_is_down_with_4004(fake: FakeDiscord, running, caplog: pytest.LogCaptureFixture) -> None:
    adapter, _ = running
    old = fake.token
    with caplog.at_level(logging.ERROR, logger="platforms.connection"):
        fake.token = "reset-" + old  # reset in the Developer Portal: RESUME and IDENTIFY with the old one fail
        fake.invalidate_session()
        reason = await status(adapter, fake, "down")
    assert "4004" in reason and "platforms.discord.token" in reason and old not in reason
    assert [r for r in caplog.records if "4004" in r.getMessage()]


async def test_a_message_content_intent_switched_off_is_down_with_4014(fake: FakeDiscord, running) -> None:
    adapter, _ = running
    fake.message_content_intent = False
    fake.invalidate_session()  # the next IDENTIFY asks for the intent
    reason = await status(adapter, fake, "down")
    assert "4014" in reason and "Message Content Intent" in reason


async def test_discord_is_down_while_rest_refuses_the_token_though_the_gateway_connection_stays_up(
        fake: FakeDiscord, running, caplog: pytest.LogCaptureFixture) -> None:
    adapter, _ = running
    channel, old = fake.dm_channel(str(USER)), fake.token
    with caplog.at_level(logging.INFO, logger="platforms.discord"):
        fake.token = "reset-" + old  # reset in the Developer Portal; the open connection is not closed (yet)
        for _ in range(2):
            with pytest.raises(Unauthorized):
                await adapter.send(Outbound(channel, None, "refused"))
        assert adapter.connection().status == "down"
        reason = adapter.connection().reason
        assert "401" in reason and "platforms.discord.token" in reason and old not in reason
        fake.token = old  # the gateway took a token again (here: the same one)
        await adapter.send(Outbound(channel, None, "taken"))
        assert adapter.connection().status == "connected"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "platforms.discord.token" in errors[0].getMessage()  # once, not once per call


async def test_typing_refused_for_the_token_adds_no_warning_to_its_one_error(
        fake: FakeDiscord, running, caplog: pytest.LogCaptureFixture) -> None:
    # Typing is refreshed in every chat with a turn running; its failures are warned of once per
    # channel (platforms.repeated_warnings), but a refused token is said once for all, as replies' are.
    adapter, _ = running
    channels = [fake.dm_channel(str(user)) for user in (USER, USER + 1, USER + 2)]
    with caplog.at_level(logging.INFO, logger="platforms.discord"):
        fake.token = "reset-" + fake.token
        for channel in channels:
            with pytest.raises(Unauthorized):
                await adapter.typing(channel, None)
    assert adapter.connection().status == "down"
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "platforms.discord.token" in warned[0], warned
