"""Slack's start behind a proxy refusing the tunnel says the proxy's status and reason, as Telegram's and
Discord's do (`platforms.proxies.proxy_refusal`): it read ``auth.test: ClientHttpProxyError``, which left
the operator guessing between a wrong password (407), the proxy's policy (403) and a host it cannot reach
(502). Never the proxy's address or password."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import NetworkError
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink


@pytest.fixture
async def refusing_proxy(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """``$https_proxy`` names a proxy that refuses every tunnel with the parametrized status line."""
    status_line: bytes = request.param

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 " + status_line + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    for name in ("http_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    async with server:
        monkeypatch.setenv("https_proxy",
                           f"http://proxyuser:pr0xy-pass@127.0.0.1:{server.sockets[0].getsockname()[1]}")
        yield


@pytest.mark.parametrize("refusing_proxy, told", [
    (b"407 Proxy Authentication Required", "407 Proxy Authentication Required"),
    (b"403 Forbidden", "403 Forbidden"),
    (b"502 Bad Gateway", "502 Bad Gateway"),
], indirect=["refusing_proxy"], ids=["407", "403", "502"])
async def test_slacks_start_names_the_proxys_refusal_without_its_address_or_password(
        refusing_proxy: None, told: str, caplog: pytest.LogCaptureFixture) -> None:
    adapter = SlackAdapter(bot_token="xoxb-1-2-abc", app_token="xapp-1-2-abc", api_base="https://slack.invalid/api/")
    try:
        with pytest.raises(NetworkError) as failed:
            await adapter.start(Sink(), [])
    finally:
        await adapter.stop()
    refusal = f"the proxy $https_proxy or $http_proxy names refused the connection: {told}"
    assert str(failed.value) == f"auth.test: {refusal}"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert refusal in logged
    for secret in ("pr0xy-pass", "proxyuser", "127.0.0.1"):
        assert secret not in str(failed.value) and secret not in logged
