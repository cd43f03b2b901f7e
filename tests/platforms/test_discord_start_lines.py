"""The line a Discord start that failed stops the gateway with, and its exit status, as Telegram's and Slack's:
`gateway.startup_errors.explain` names ``platforms.discord.api_base`` and what failed for an API that cannot be
reached (status 1: it may come back), and ``platforms.discord.token`` for a refused token (status 78, as
docs/configuration.md's exit table says). It was ``could not start (… ClientConnectorDNSError(ConnectionKey(
host=…, proxy_auth=…, proxy_headers_hash=None …)))`` for the first, from aiohttp's repr, and status 1 for both.
The real discord.py client, on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain, lasting
from platforms.discord import DiscordAdapter, DiscordStartError
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, join_heartbeat_threads
from tests.platforms.sink import Sink

TOKEN = "MTIz.SECRET-discord-token.abc"
PROXY_PASSWORD = "pr0xy-SECRET"

fake = fake_discord()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def start_line(api_base: str, token: str = TOKEN, **kw: object) -> tuple[str, bool]:
    """The gateway's line for the adapter's failed start, and whether it lasts (exit status 78)."""
    adapter = DiscordAdapter(token, api_base=api_base, ready_timeout=5.0, **kw)  # type: ignore[arg-type]
    try:
        with pytest.raises(DiscordStartError) as failed:
            await adapter.start(Sink())
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    config = config_from_mapping({"platforms": {"discord": {
        "enabled": True, "token": token, "api_base": api_base, "allow_all": True}}}).config
    return explain(failed.value, config), lasting(failed.value)


@pytest.fixture
async def plain_http() -> AsyncIterator[int]:
    """A port that answers HTTP in plain text: an ``https://`` ``api_base`` on it fails its TLS handshake."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_an_api_base_nothing_listens_on_is_named_with_what_failed() -> None:
    api_base = f"http://127.0.0.1:{closed_port()}/api/v10"
    line, lasts = await start_line(api_base)
    assert line.startswith(f"platforms.discord.api_base: no working Discord API at {api_base} (cannot log in:"
                           " ClientConnectorError: Cannot connect to host 127.0.0.1:"), line
    assert line.endswith("; fix platforms.discord.api_base, or the network or proxy between"), line
    assert "ConnectionKey" not in line and TOKEN not in line
    assert not lasts  # exit 1: a supervisor starts it again


async def test_a_tls_handshake_with_a_plain_http_server_is_named(plain_http: int) -> None:
    api_base = f"https://127.0.0.1:{plain_http}/api/v10"
    line, lasts = await start_line(api_base)
    assert line.startswith(f"platforms.discord.api_base: no working Discord API at {api_base} (cannot log in:"
                           " ClientConnectorSSLError: "), line
    assert "ConnectionKey" not in line and not lasts


async def test_a_proxy_that_cannot_be_reached_is_named_without_its_password(monkeypatch) -> None:
    monkeypatch.setenv("https_proxy", f"http://user:{PROXY_PASSWORD}@127.0.0.1:{closed_port()}")
    line, lasts = await start_line("https://discord.invalid/api/v10")
    assert line.startswith("platforms.discord.api_base: no working Discord API at https://discord.invalid/api/v10"
                           " (cannot log in: ClientProxyConnectionError: "), line
    assert PROXY_PASSWORD not in line and "ConnectionKey" not in line and not lasts


async def test_a_refused_token_names_the_token_setting_and_is_not_started_again(fake: FakeDiscord) -> None:
    line, lasts = await start_line(fake.api_base, client_factory=fake.client_factory)  # the fake takes its own
    assert line == (f"platforms.discord: {fake.api_base} refused the bot (Discord rejected the bot token (401));"
                    " check platforms.discord.token and platforms.discord.api_base"), line
    assert lasts  # exit 78: every start is refused alike until the token is fixed


async def test_the_message_content_intent_switched_off_is_not_started_again() -> None:
    # Each start is a new gateway login: restarted every few seconds, it spent the day's 1,000 in hours.
    async with FakeDiscord(message_content_intent=False) as switched_off:
        line, lasts = await start_line(switched_off.api_base, switched_off.token,
                                       client_factory=switched_off.client_factory, gateway_url=switched_off.gateway_url)
    assert "the Message Content intent is required" in line and "Privileged Gateway Intents" in line, line
    assert switched_off.token not in line
    assert lasts  # exit 78
