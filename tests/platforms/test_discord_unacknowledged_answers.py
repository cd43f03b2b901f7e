"""A served user's slash command whose acknowledgement Discord refused (rate limited past its 3 seconds) keeps its
token, known as unacknowledged (`platforms.discord_interactions.Interactions.unacknowledged`): every part of the
gateway's answer still goes to the channel, in this process without asking the interaction, and after a restart,
which no longer knows it and asks Discord. The real discord.py client, outbox and state file, against the fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
GUILD, CHANNEL, USER = 500, 600, 42
EPHEMERAL = 64
LONG = "word " * 500  # two parts at Discord's 2000 characters
WAIT = 5.0

fake = fake_discord()


def for_all(fake: FakeDiscord) -> list[str]:
    return [m.content for m in fake.bot_messages(CHANNEL) if not m.flags & EPHEMERAL and m.content]


class Process:
    """One process of the gateway's, as far as this takes: the adapter, and what it handed over."""

    def __init__(self, fake: FakeDiscord, path: Path) -> None:
        self.adapter: DiscordAdapter = adapter_for(fake)
        self.store = GatewayStore(path)
        self.outbox = Outbox(self.store.outbox, {"discord": self.adapter})
        self.got: list[Inbound] = []

    async def __aenter__(self) -> Process:
        async def sink(inbound: Inbound) -> None:
            self.got.append(inbound)

        await self.adapter.start(sink, [CommandSpec("agents", "List running subagents")])
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.outbox.close()
        self.store.close()
        await self.adapter.stop()
        await join_heartbeat_threads()


@pytest.fixture
async def command(fake: FakeDiscord) -> AsyncIterator[None]:
    fake.fail_next(CALLBACK, 429, retry_after=3600)  # past Discord's 3 seconds: not waited for
    yield


async def _unacknowledged(fake: FakeDiscord, process: Process) -> Inbound:
    fake.push_interaction("agents", USER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: process.got)
    [inbound] = process.got
    assert inbound.reply_token is not None
    return inbound


async def test_every_part_goes_to_the_channel(fake: FakeDiscord, command: None, tmp_path: Path) -> None:
    async with Process(fake, tmp_path / "state.db") as process:
        await process.outbox.start()
        inbound = await _unacknowledged(fake, process)
        process.outbox.enqueue("discord", inbound.chat_id, inbound.thread_id, LONG, kind="command", key="answer",
                               reply_token=inbound.reply_token)
        assert await process.outbox.wait_sent("answer:0", timeout=WAIT) is not None
        assert await process.outbox.wait_sent("answer:1", timeout=WAIT) is not None
    assert len(for_all(fake)) == 2
    assert not [c for c in fake.calls if c.route.startswith(("GET /webhooks", "POST /webhooks"))]


async def test_every_part_goes_to_the_channel_after_a_restart(fake: FakeDiscord, command: None,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with Process(fake, path) as process:  # gone before its outbox sent the answer
        inbound = await _unacknowledged(fake, process)
        process.outbox.enqueue("discord", inbound.chat_id, inbound.thread_id, LONG, kind="command", key="answer",
                               reply_token=inbound.reply_token)
    async with Process(fake, path) as process:
        await process.outbox.start()
        assert await process.outbox.wait_sent("answer:0", timeout=WAIT) is not None
        assert await process.outbox.wait_sent("answer:1", timeout=WAIT) is not None
    assert len(for_all(fake)) == 2 and not [m for m in fake.bot_messages(CHANNEL) if m.flags & EPHEMERAL]
