"""A Discord slash command's refusal, for its user alone, is still theirs alone when the gateway restarts.

The adapter kept which interactions get ephemeral answers in memory only: a refusal still in the outbox at a
restart replaced "thinking…" in view of the whole channel (naming the stranger's id), and one whose "thinking…"
the dead process had deleted already went to the channel as a message of its own (Discord's "Unknown Message"
read as an expired token). Now the outbox journals the answer as private (`Outbound.private`), and the next
process sends it as the first one would have: "thinking…" deleted, an ephemeral follow-up. Past the token's 15
minutes it cannot be ephemeral, and is not posted at all. The real discord.py client, the real outbox and state
database, the adapter and outbox made anew on the same file, against the fake; and `switchboard run` killed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.access import REFUSAL
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord, FakeMessage
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.scenarios.test_outbox_restart import restarts, start

UNTHINK = "DELETE /webhooks/{application_id}/{token}/messages/{message_id}"
ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
EPHEMERAL = 64
GUILD, CHANNEL, STRANGER = 500, 600, 999
REFUSED = REFUSAL.format(user_id=STRANGER)
WAIT = 5.0

fake = fake_discord()


def seen_by_all(fake: FakeDiscord, interaction: str, channel: int = CHANNEL) -> list[FakeMessage]:
    """The interaction's messages the channel sees ("thinking…" too, until it is answered or deleted)."""
    return [m for m in fake.bot_messages(channel) if m.interaction_id == interaction and not m.flags & EPHEMERAL]


def told_alone(fake: FakeDiscord, interaction: str, channel: int = CHANNEL) -> list[str]:
    return [m.content for m in fake.bot_messages(channel) if m.interaction_id == interaction and m.flags & EPHEMERAL]


@contextlib.asynccontextmanager
async def running(fake: FakeDiscord, path: Path, *, start: bool = True,
                  max_retry_after: float = 60.0) -> AsyncIterator[tuple[Outbox, DiscordAdapter, list[Inbound]]]:
    """A process of the gateway's, as far as this takes: an adapter, and the outbox on the state file ``path``
    (started unless not ``start``: what it journals waits for the next process), and what the adapter handed
    over. Its end is a death's, for the outbox: what it had not sent stays pending."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    store = GatewayStore(path)
    outbox = Outbox(store.outbox, {"discord": adapter}, max_retry_after=max_retry_after)
    if start:
        await outbox.start()
    try:
        yield outbox, adapter, got
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()


async def refused(fake: FakeDiscord, outbox: Outbox, adapter: DiscordAdapter, got: list[Inbound]) -> str:
    """A stranger's slash command, refused as the gateway refuses it: the adapter told (`HearsRefusals`), then
    the refusal journaled as the command's answer. Its interaction id."""
    interaction = fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: got)
    [command] = got
    adapter.refused(command)
    outbox.enqueue("discord", command.chat_id, command.thread_id, REFUSED, kind="command", key="refused",
                   reply_token=command.reply_token)
    return interaction


async def test_a_refusal_left_unsent_at_a_restart_is_sent_to_its_user_alone_after_it(
        fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with running(fake, path, start=False) as (outbox, adapter, got):  # gone before it sent it
        interaction = await refused(fake, outbox, adapter, got)
    assert [m.content for m in seen_by_all(fake, interaction)] == [""]  # "thinking…", still
    async with running(fake, path) as (outbox, _, _):
        await outbox.wait_sent("refused:0", timeout=WAIT)
    assert told_alone(fake, interaction) == [REFUSED]
    assert seen_by_all(fake, interaction) == []  # "thinking…" deleted, the stranger's id in no one else's view
    assert fake.calls_to(ANSWER) == [] and len(fake.calls_to(UNTHINK)) == 1


async def test_a_refusal_rate_limited_before_its_thinking_was_deleted_is_still_private_after_a_restart(
        fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    fake.fail_next(UNTHINK, 429, retry_after=60)  # the part waits in the outbox: the process dies meanwhile
    async with running(fake, path) as (outbox, adapter, got):
        interaction = await refused(fake, outbox, adapter, got)
        await fake.wait_for(lambda: [c for c in fake.calls_to(UNTHINK) if c.status == 429])
    async with running(fake, path, max_retry_after=0.05) as (outbox, _, _):
        await outbox.wait_sent("refused:0", timeout=WAIT)
    assert told_alone(fake, interaction) == [REFUSED] and seen_by_all(fake, interaction) == []
    assert fake.calls_to(ANSWER) == []


async def test_a_refusal_whose_thinking_a_dead_process_deleted_follows_to_its_user_alone(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # Deleted, then the follow-up held back by a 429 when the process died: Discord now answers "Unknown
    # Message" for the deferred response, which was read as the token gone, and the refusal went to the channel.
    path = tmp_path / "state.db"
    fake.fail_next(FOLLOW_UP, 429, retry_after=60)
    async with running(fake, path) as (outbox, adapter, got):
        interaction = await refused(fake, outbox, adapter, got)
        await fake.wait_for(lambda: [c for c in fake.calls_to(FOLLOW_UP) if c.status == 429])
    assert seen_by_all(fake, interaction) == [] and told_alone(fake, interaction) == []
    async with running(fake, path, max_retry_after=0.05) as (outbox, _, _):
        sent = await outbox.wait_sent("refused:0", timeout=WAIT)
    assert told_alone(fake, interaction) == [REFUSED] and seen_by_all(fake, interaction) == []
    assert fake.bot_messages(CHANNEL)[-1].id == sent


async def test_a_refusal_left_past_its_interactions_15_minutes_is_not_posted_in_the_channel(
        fake: FakeDiscord, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "state.db"
    async with running(fake, path, start=False) as (outbox, adapter, got):
        interaction = await refused(fake, outbox, adapter, got)
    fake.clock = lambda: time.monotonic() + 16 * 60  # the token expired while the gateway was down
    store = GatewayStore(path)
    try:
        async with running(fake, path) as (outbox, _, _):
            assert await outbox.wait_sent("refused:0", timeout=WAIT) is None  # failed
        row = store.outbox.message("refused:0")
        assert row.status == "failed" and row.last_error.startswith(
            "NotFound: the interaction expired: an answer for its user alone is not posted in the channel")
    finally:
        store.close()
    # Nowhere, nor in the channel: its "thinking…" is left, which Discord shows its user as failed.
    assert [m.content for m in fake.bot_messages(CHANNEL)] == [""] and told_alone(fake, interaction) == []
    assert [m.content for m in seen_by_all(fake, interaction)] == [""]


@restarts(2)
async def test_refusals_a_sigkill_left_unsent_go_to_their_users_alone_after_the_restart(tmp_path: Path) -> None:
    # `switchboard run` killed while two strangers' refusals wait in its outbox: one before its "thinking…" was
    # deleted, one after (its follow-up held back by a 429 alike).
    config = tmp_path / "switchboard.yaml"
    async with FakeDiscord() as fake:
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "delivery": {"max_retry_after": 5},  # what the restart waits of the 429s too
            "platforms": {"discord": {"enabled": True, "token": fake.token, "api_base": fake.api_base,
                                      "gateway_url": fake.gateway_url, "allowed_users": ["42"]}},
        }))
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.live_connections, timeout=30)
            fake.fail_next(UNTHINK, 429, retry_after=60)
            before = fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
            await fake.wait_for(lambda: [c for c in fake.calls_to(UNTHINK) if c.status == 429], timeout=30)
            fake.fail_next(FOLLOW_UP, 429, retry_after=60)
            after = fake.push_interaction("agents", STRANGER + 1, channel=CHANNEL + 1, guild=GUILD)
            await fake.wait_for(lambda: [c for c in fake.calls_to(FOLLOW_UP) if c.status == 429], timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert [m.content for m in seen_by_all(fake, before)] == [""]  # "thinking…"
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: told_alone(fake, before) and told_alone(fake, after, CHANNEL + 1), timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
        await join_heartbeat_threads()
    assert told_alone(fake, before) == [REFUSED] and seen_by_all(fake, before) == []
    assert told_alone(fake, after, CHANNEL + 1) == [REFUSAL.format(user_id=STRANGER + 1)]
    assert seen_by_all(fake, after, CHANNEL + 1) == [] and fake.calls_to(ANSWER) == []
    assert proc.returncode == 0
