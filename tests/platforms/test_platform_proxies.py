"""The platforms go through the proxy the environment names, as the model's requests do (`platforms.proxies`):
``$https_proxy`` or ``$http_proxy`` by the URL's scheme, unless ``$no_proxy`` exempts the host. Behind an
egress proxy the model check passed, and the start then failed at the first platform ("no working Telegram Bot
API at …"): aiogram and discord.py read no environment. slack-sdk took ``$HTTPS_PROXY`` for every URL,
``$no_proxy`` unread.

The real SDKs against the loopback fakes, through `ForwardProxy`: a host under ``.invalid`` is reached
through it alone."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from platforms.base import NetworkError, Outbound
from platforms.discord import DiscordAdapter, DiscordStartError
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.proxies import proxy_for
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import join_heartbeat_threads
from tests.forward_proxy import ForwardProxy
from tests.platforms.sink import Sink

CREDENTIALS = "Basic " + base64.b64encode(b"proxyuser:pr0xy-pass").decode()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The test's own proxy environment, whatever the suite runs with."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                 "no_proxy", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
async def proxy(env: pytest.MonkeyPatch) -> AsyncIterator[ForwardProxy]:
    """A proxy that ``$http_proxy`` names, with a user and password."""
    async with ForwardProxy() as proxy:
        env.setenv("http_proxy", proxy.url.replace("http://", "http://proxyuser:pr0xy-pass@"))
        yield proxy


def test_the_proxy_is_chosen_by_the_urls_scheme_and_host(env: pytest.MonkeyPatch) -> None:
    env.setenv("http_proxy", "http://plain:3128")
    env.setenv("HTTPS_PROXY", "tls-proxy:3128")  # no scheme: an http proxy, as httpx and curl take it
    env.setenv("no_proxy", "localhost,.corp.example")
    assert proxy_for("http://api.example/x") == proxy_for("ws://api.example/") == "http://plain:3128"
    assert proxy_for("https://api.example/x") == proxy_for("wss://api.example/") == "http://tls-proxy:3128"
    assert proxy_for("http://localhost:8081/bot{token}/{method}") is None
    assert proxy_for("https://chat.corp.example/api/") is None
    env.delenv("http_proxy")
    assert proxy_for("http://api.example/x") is None  # $https_proxy is for https URLs only


async def test_telegram_polls_and_sends_through_the_proxy(proxy: ForwardProxy) -> None:
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=f"http://telegram.invalid:{urlsplit(fake.base_url).port}")
        sink = Sink()
        try:
            await adapter.start(sink, [])
            fake.push_message(42, "hello")
            await fake.wait_for(lambda: sink.inbound)
            await adapter.send(Outbound(chat_id="42", thread_id=None, text="hi there"))
        finally:
            await adapter.stop()
    assert [i.text for i in sink.inbound] == ["hello"]
    assert [m["text"] for m in fake.messages["42"]] == ["hi there"]
    assert proxy.requests and all(r.startswith("POST http://telegram.invalid:") for r in proxy.requests)
    assert set(proxy.credentials) == {CREDENTIALS}


async def test_discord_rest_and_gateway_go_through_the_proxy(proxy: ForwardProxy) -> None:
    async with FakeDiscord() as fake:
        where = f"discord.invalid:{fake.port}"
        adapter = DiscordAdapter(fake.token, api_base=f"http://{where}/api/v10", gateway_url=f"ws://{where}/gateway",
                                 client_factory=fake.client_factory, ready_timeout=5.0)
        sink = Sink()
        try:
            await adapter.start(sink, [])
            fake.push_dm(42, "hello")
            await fake.wait_for(lambda: sink.inbound)
            await adapter.send(Outbound(chat_id=fake.dm_channel(42), thread_id=None, text="hi there"))
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []
    assert [i.text for i in sink.inbound] == ["hello"]
    assert [m.content for m in fake.bot_messages(fake.dm_channel(42))] == ["hi there"]
    assert any(r.startswith(f"GET ws://{where}/gateway?") for r in proxy.requests)
    assert any(r.startswith(f"POST http://{where}/api/v10/channels/") for r in proxy.requests)
    assert set(proxy.credentials) == {CREDENTIALS}


async def test_slack_goes_straight_to_a_host_no_proxy_exempts(proxy: ForwardProxy, env: pytest.MonkeyPatch) -> None:
    env.setenv("HTTPS_PROXY", proxy.url)  # slack-sdk's first choice, for any URL
    env.setenv("no_proxy", "127.0.0.1")
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        sink = Sink()
        try:
            await adapter.start(sink, [])
            await fake.push_dm("U1", "hello")
            await fake.wait_for(lambda: sink.inbound)
            await adapter.send(Outbound(chat_id="DU1", thread_id=None, text="hi there"))
        finally:
            await adapter.stop()
    assert [i.text for i in sink.inbound] == ["hello"]
    assert fake.calls_to("chat.postMessage")
    assert proxy.requests == []


async def test_an_https_api_base_is_tunnelled_through_the_https_proxy(env: pytest.MonkeyPatch) -> None:
    async with FakeTelegram() as fake, ForwardProxy() as proxy:
        env.setenv("http_proxy", "http://127.0.0.1:9")  # for http URLs only
        env.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://proxyuser:pr0xy-pass@"))
        where = f"telegram.invalid:{urlsplit(fake.base_url).port}"
        adapter = TelegramAdapter(fake.token, api_base=f"https://{where}")
        try:
            with pytest.raises(NetworkError, match="SSL"):  # the fake speaks no TLS: the tunnel is all it gets
                await adapter.start(Sink(), [])
        finally:
            await adapter.stop()
    assert proxy.requests == [f"CONNECT {where}"]
    assert proxy.credentials == [CREDENTIALS]


@pytest.fixture
async def refusing_proxy(env: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """``$https_proxy`` names a proxy that refuses every tunnel: a wrong password."""
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    async with server:
        env.setenv("https_proxy", f"http://proxyuser:pr0xy-pass@127.0.0.1:{server.sockets[0].getsockname()[1]}")
        yield


async def test_a_proxys_refusal_is_told_without_its_password(refusing_proxy: None) -> None:
    refusal = "the proxy $https_proxy or $http_proxy names refused the connection: 407 Proxy Authentication Required"
    telegram = TelegramAdapter("123456:" + "a" * 35, api_base="https://telegram.invalid")
    try:
        with pytest.raises(NetworkError) as told:
            await telegram.start(Sink(), [])
    finally:
        await telegram.stop()
    assert refusal in str(told.value) and "pr0xy-pass" not in str(told.value)
    discord = DiscordAdapter("token", api_base="https://discord.invalid/api/v10")
    try:
        with pytest.raises(DiscordStartError) as failed:
            await discord.start(Sink(), [])
    finally:
        await discord.stop()
    assert str(failed.value) == f"cannot log in: {refusal}"  # the gateway's line names the api_base
