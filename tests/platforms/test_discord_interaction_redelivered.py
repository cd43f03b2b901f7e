"""A slash command Discord delivers again (replayed on RESUME) while the gateway is answering it: the real
discord.py client against the loopback fake (`platforms.discord_commands.received`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42

fake = fake_discord()


@pytest.fixture
async def running(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, list[Inbound]]]:
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)  # the gateway's inbox drops the repeat by its event id

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        yield adapter, got
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_a_redelivered_interaction_keeps_the_first_answer_the_next_part_follows_it(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """Its "thinking…" call comes back "already acknowledged" (40060). Taken as a deferral of its own, it
    set the interaction back to "thinking…": the answer's next part replaced the first part, lost to the user."""
    adapter, got = running
    interaction = fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    [command] = got
    assert command.reply_token is not None
    first = await adapter.send(Outbound(command.chat_id, None, "Part one.", kind="command",
                                        idempotency_key="c1:0", reply_token=command.reply_token))
    fake.replay_on_resume([interaction])
    fake.request_reconnect()
    await fake.wait_for(lambda: len(got) == 2)
    assert got[1].event_id == command.event_id
    second = await adapter.send(Outbound(command.chat_id, None, "Part two.", kind="command",
                                         idempotency_key="c1:1", reply_token=command.reply_token))
    shown = [(m.id, m.content) for m in fake.bot_messages(command.chat_id)]
    assert shown == [(first.message_id, "Part one."), (second.message_id, "Part two.")]
