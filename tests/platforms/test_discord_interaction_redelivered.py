"""A slash command Discord delivers again (replayed on RESUME): the real discord.py client against the loopback
fake (`platforms.discord.DiscordAdapter._on_command`, `platforms.discord_commands.received`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, join_heartbeat_threads

USER = 42

fake = fake_discord()

Running = tuple[DiscordAdapter, list[Inbound], list[str]]


@pytest.fixture
async def running(fake: FakeDiscord) -> AsyncIterator[Running]:
    """The adapter, what it handed over, and the id of every interaction discord.py dispatched, repeats too."""
    got: list[Inbound] = []
    delivered: list[str] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)
        if inbound.text == "slow":
            await asyncio.Event().wait()  # still being recorded at a stop: what comes after stays queued

    def client_factory(**options: Any) -> Any:
        client = fake.client_factory(**options)

        async def on_interaction(interaction: Any) -> None:  # dispatched once the command's own task began
            delivered.append(str(interaction.id))
        client.on_interaction = on_interaction
        return client

    adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=client_factory, ready_timeout=5.0)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        yield adapter, got, delivered
    finally:
        await adapter.stop_within(0.05)  # "slow" is never recorded
        await adapter.close()
        await join_heartbeat_threads()


async def _answered_then_replayed(fake: FakeDiscord, running: Running) -> tuple[Inbound, str]:
    """A command handed over and answered, then delivered again; returns it and its answer's message id."""
    adapter, got, delivered = running
    interaction = fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    command = got[0]
    assert command.reply_token is not None
    first = await adapter.send(Outbound(command.chat_id, None, "Part one.", kind="command",
                                        idempotency_key="c1:0", reply_token=command.reply_token))
    fake.push_dm(USER, "slow")
    await fake.wait_for(lambda: len(got) == 2)
    fake.replay_on_resume([interaction])
    fake.request_reconnect()
    await fake.wait_for(lambda: delivered == [interaction, interaction])
    return command, first.message_id


async def test_a_redelivered_interaction_keeps_the_first_answer_the_next_part_follows_it(
        fake: FakeDiscord, running: Running) -> None:
    """Its "thinking…" call came back "already acknowledged" (40060). Taken as a deferral of its own, it
    set the interaction back to "thinking…": the answer's next part replaced the first part, lost to the user."""
    adapter, got, _ = running
    command, first = await _answered_then_replayed(fake, running)
    second = await adapter.send(Outbound(command.chat_id, None, "Part two.", kind="command",
                                         idempotency_key="c1:1", reply_token=command.reply_token))
    shown = [(m.id, m.content) for m in fake.bot_messages(command.chat_id)]
    assert shown == [(first, "Part one."), (second.message_id, "Part two.")]
    assert [i.text for i in got] == ["/agents", "slow"]  # the repeat is dropped, not handed over


async def test_a_redelivered_interaction_queued_at_a_stop_leaves_the_first_deliverys_answer_alone(
        fake: FakeDiscord, running: Running) -> None:
    """Left unrecorded, the repeat was answered "Not taken — send it again" in place of the answer the first
    delivery was given (the same interaction), and the user, sending it again, got a second turn."""
    adapter, _, _ = running
    command, first = await _answered_then_replayed(fake, running)
    await adapter.stop_within(0.05)  # "slow" is never recorded
    assert [(m.id, m.content) for m in fake.bot_messages(command.chat_id)] == [(first, "Part one.")]
    assert len(fake.interactions[command.event_id]["responses"]) == 1  # not even asked to defer again
