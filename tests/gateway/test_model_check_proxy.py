"""The start's model check goes the way the model's requests go: through the proxy the environment
names (``http_proxy``, ``https_proxy``, ``no_proxy``), as the OpenAI SDK's HTTP client does. Where the
model server is reached only through a proxy, a check that went straight there found nothing, and the
gateway never started (``cannot reach``, status 1, started again every 5 s for ever)."""

from __future__ import annotations

import asyncio

import pytest

from agent.settings import ModelSettings
from gateway.errors import StartupError
from gateway.preflight import check_model

MODEL = "http://model.invalid/v1"
"""A host no resolver knows (RFC 2606): only the proxy can reach it."""


@pytest.fixture
def proxy():
    """A forward proxy on loopback answering every request itself; the request lines it got."""
    seen: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
                     b"Connection: close\r\n\r\n{\"data\":[]}")
        await writer.drain()
        writer.close()

    return answer, seen


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                 "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_a_model_server_behind_the_environments_proxy_is_reached_through_it(proxy, no_proxy_env):
    answer, seen = proxy
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        no_proxy_env.setenv("http_proxy", f"http://127.0.0.1:{port}")
        await check_model(ModelSettings(provider="openai", base_url=MODEL, timeout_seconds=5))
    assert seen == [f"GET {MODEL}/models HTTP/1.1"]


async def test_a_host_no_proxy_exempts_is_still_checked_directly(proxy, no_proxy_env):
    answer, seen = proxy
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        no_proxy_env.setenv("http_proxy", f"http://127.0.0.1:{port}")
        no_proxy_env.setenv("no_proxy", "model.invalid")
        with pytest.raises(StartupError, match=r"^model\.base_url: cannot reach http://model\.invalid/v1 \("):
            await check_model(ModelSettings(provider="openai", base_url=MODEL, timeout_seconds=5))
    assert seen == []


async def test_a_proxy_that_cannot_be_reached_is_blamed_not_the_model_server_and_not_shown(no_proxy_env,
                                                                                          unused_tcp_port):
    no_proxy_env.setenv("http_proxy", f"http://proxyuser:pr0xy-pass@127.0.0.1:{unused_tcp_port}")
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai", base_url=MODEL, timeout_seconds=5))
    assert str(info.value).startswith(
        f"model.base_url: cannot reach {MODEL} (the proxy $http_proxy or $https_proxy names cannot be reached:"
        " connection refused)"), info.value
    assert "pr0xy-pass" not in str(info.value)


async def test_a_model_server_in_an_address_range_no_proxy_names_is_checked_directly(no_proxy_env, unused_tcp_port):
    # As the model's client reads it (httpx: ranges too). aiohttp's own reading of the environment took the range
    # for nothing, sent the check to the proxy, and a start whose model answered failed with status 1 for ever.
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"data\":[]}")
        await writer.drain()
        writer.close()

    model = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with model:
        port = model.sockets[0].getsockname()[1]
        no_proxy_env.setenv("http_proxy", f"http://127.0.0.1:{unused_tcp_port}")  # nothing listens: unreachable
        no_proxy_env.setenv("no_proxy", "127.0.0.0/8")
        await check_model(ModelSettings(provider="openai", base_url=f"http://127.0.0.1:{port}/v1",
                                        timeout_seconds=5))
