"""A start against an ``api_base`` that takes the connection and never answers (a wrong proxy, a captive portal, a
hung server) fails within a bound, with the line `gateway.startup_errors.explain` gives an API that cannot be reached
(exit status 1). Discord's login waited aiohttp's 300 s per call, Telegram's getMe the bot's 60 s, without a word
meanwhile; Slack's ``auth.test`` had its 30 s already. Each bound is shortened here; the real SDKs on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain, lasting
from platforms.base import NetworkError
from platforms.discord import DiscordAdapter, DiscordStartError
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import join_heartbeat_threads
from tests.platforms.sink import Sink

BOUND = 0.2
"""The bound each test gives the start's calls."""
LONGEST = 5.0
"""Longer than any start here may take: past it, the start waited for the SDK's own timeouts (minutes)."""
FIX = "; fix platforms.{}.api_base, or the network or proxy between"


@pytest.fixture
async def silent() -> AsyncIterator[str]:
    """``http://127.0.0.1:<port>`` of a server that accepts connections and reads them, never answering."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):  # until the client gives up and closes
            pass
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        for writer in held:
            writer.close()


async def failed_start(adapter: Any, error: type[Exception]) -> Exception:
    """What ``adapter``'s start raised, which it must within `LONGEST`."""
    with pytest.raises(error) as failed:
        async with asyncio.timeout(LONGEST):
            await adapter.start(Sink())
    return failed.value


def start_line(platform: str, exc: BaseException, **settings: str) -> str:
    config = config_from_mapping({"platforms": {platform: {"enabled": True, "allow_all": True, **settings}}}).config
    return explain(exc, config)


async def test_a_discord_login_never_answered_fails_within_the_login_timeout(silent: str) -> None:
    api_base = f"{silent}/api/v10"
    adapter = DiscordAdapter("MTIz.silent.abc", api_base=api_base, login_timeout=BOUND)
    try:
        exc = await failed_start(adapter, DiscordStartError)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    line = start_line("discord", exc, token="MTIz.silent.abc", api_base=api_base)
    assert line == (f"platforms.discord.api_base: no working Discord API at {api_base} (cannot log in: no answer from"
                    f" the Discord API within {BOUND:g}s){FIX.format('discord')}"), line
    assert not lasting(exc)  # exit 1: a supervisor starts it again


async def test_a_telegram_getme_never_answered_fails_within_the_start_timeout(silent: str) -> None:
    adapter = TelegramAdapter("123:silent", api_base=silent, start_timeout=BOUND)
    exc = await failed_start(adapter, NetworkError)
    line = start_line("telegram", exc, token="123:silent", api_base=silent)
    assert line == (f"platforms.telegram.api_base: no working Telegram Bot API at {silent} (Telegram did not answer"
                    f" getMe within {BOUND:g}s){FIX.format('telegram')}"), line
    assert not lasting(exc)


async def test_a_slack_auth_test_never_answered_fails_within_the_call_timeout(silent: str) -> None:
    api_base = f"{silent}/api/"
    adapter = SlackAdapter(bot_token="xoxb-silent", app_token="xapp-silent", api_base=api_base, call_timeout=BOUND)
    exc = await failed_start(adapter, NetworkError)
    line = start_line("slack", exc, bot_token="xoxb-silent", app_token="xapp-silent", api_base=api_base)
    assert line == (f"platforms.slack.api_base: no working Slack Web API at {api_base} (auth.test: TimeoutError)"
                    f"{FIX.format('slack')}"), line
    assert not lasting(exc)
