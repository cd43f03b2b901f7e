"""The real discord.py client against `FakeDiscord`, for tests: an adapter pointed at the fake, a started one
as a fixture, and the wait for discord.py's heartbeat threads once the adapters have stopped."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter, discord  # discord.py, imported there without its audioop warning
from platforms.fakes.discord import FakeDiscord

AGENTS = (CommandSpec("agents", "List running subagents"),)


def adapter_for(fake: FakeDiscord, **kw: Any) -> DiscordAdapter:
    return DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory,
                          ready_timeout=5.0, **kw)


async def join_heartbeat_threads() -> None:
    """discord.py heartbeats from a thread of its own: wait until it has seen its stop flag, so that
    it does not outlive the event loop the test closes."""
    for thread in threading.enumerate():
        if thread.name.startswith("keep-alive-handler"):
            await asyncio.to_thread(thread.join, 5)


class LongBackoff(discord.client.ExponentialBackoff):
    """discord.py's reconnect backoff fixed at 30 s instead of random (`long_backoff`): a stop comes
    while it waits, which closing the client does not cut short."""

    waiting: asyncio.Event

    def delay(self) -> float:
        LongBackoff.waiting.set()
        return 30.0


def long_backoff(monkeypatch: Any) -> asyncio.Event:
    """discord.py's reconnects wait 30 s from now on (pytest's ``monkeypatch`` undoes it); the event is
    set once one is waiting."""
    LongBackoff.waiting = asyncio.Event()
    monkeypatch.setattr(discord.client, "ExponentialBackoff", LongBackoff)
    return LongBackoff.waiting


def fake_discord() -> Any:
    """A ``fake`` fixture for a test module (``fake = fake_discord()``): a `FakeDiscord` started for
    the test, which must have seen nothing it could not read (``errors``) by its end."""

    @pytest.fixture
    async def fake() -> AsyncIterator[FakeDiscord]:
        async with FakeDiscord() as fake:
            yield fake
        assert fake.errors == []

    return fake


def running_discord(*, commands: tuple[CommandSpec, ...] = AGENTS, **kw: Any) -> Any:
    """A ``running`` fixture for a test module (``running = running_discord()``): an adapter on the module's
    ``fake`` (`adapter_for` with ``kw``), started with ``commands``, and the list of what it handed over."""

    @pytest.fixture
    async def running(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, list[Inbound]]]:
        got: list[Inbound] = []

        async def sink(inbound: Inbound) -> None:
            got.append(inbound)

        adapter = adapter_for(fake, **kw)
        await adapter.start(sink, list(commands))
        try:
            yield adapter, got
        finally:
            await adapter.stop()
            await join_heartbeat_threads()

    return running


def discord_gateways() -> Any:
    """A ``start`` fixture for a test module (``start = discord_gateways()``): ``await start(**kw)`` starts a
    `Gateway` (``kw`` for `start_gateway`) on an adapter pointed at the module's ``fake`` (``adapter``: more options
    for `adapter_for`), open to everyone, its file tools on; every one started is stopped at the end."""

    @pytest.fixture
    async def start(tmp_path: Path, fake: FakeDiscord) -> AsyncIterator[Callable[..., Awaitable[Gateway]]]:
        started: list[Gateway] = []

        async def start_(adapter: Mapping[str, Any] | None = None, **kw: Any) -> Gateway:
            config = make_config(tmp_path, platforms={"discord": {"allow_all": True}}, agent={"toolsets": ["file"]})
            (tmp_path / "state" / "workspace").mkdir(parents=True, exist_ok=True)
            started.append(await start_gateway(config, [adapter_for(fake, **(adapter or {}))], **kw))
            return started[-1]

        try:
            yield start_
        finally:
            for gateway in started:
                await gateway.stop(grace=0)
            await join_heartbeat_threads()

    return start
