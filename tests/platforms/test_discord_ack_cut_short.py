"""A slash command's "thinking…" acknowledgement that the adapter gave up on before Discord answered it
(a stop beginning, or Discord's answer not coming in time): the request may have reached Discord all the
same, which then shows "thinking…". The command keeps its interaction, and the answer (or the stop's "not
taken") goes where Discord says: in place of "thinking…" if it took the acknowledgement, in the channel if
not. The real discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.fakes.discord import FLAG_LOADING, FakeDiscord
from platforms.not_recorded import MAY_BE_TAKEN
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
USER = 42
COMMANDS = [CommandSpec("agents", "List running subagents")]

fake = fake_discord()


def thinking(fake: FakeDiscord, channel: str) -> list[str]:
    return [m.id for m in fake.bot_messages(channel) if m.flags & FLAG_LOADING]


async def test_an_acknowledgement_a_stop_gave_up_that_discord_took_is_answered_in_place(fake: FakeDiscord) -> None:
    """Cut short by the stop, the acknowledgement counted as refused: the answer went to the channel while
    Discord, which had taken it, showed "thinking…" for 15 minutes beside it."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, COMMANDS)
    try:
        release = fake.hold(CALLBACK)
        interaction = fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        await adapter.stop_within(1.0)  # gives the acknowledgement up, hands the command over
        [command] = got
        release.set()  # the request had reached Discord: it takes it
        await fake.wait_for(lambda: fake.interactions[interaction]["responses"] == [5])
        assert command.reply_token is not None
        sent = await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                           idempotency_key="c1:0", reply_token=command.reply_token))
        [answer] = fake.bot_messages(command.chat_id)
        assert (answer.id, answer.content, answer.flags & FLAG_LOADING) == (sent.message_id, "No subagents.", 0)
        assert fake.calls_to(FOLLOW_UP) == []
    finally:
        await adapter.close()
        await join_heartbeat_threads()


async def test_an_acknowledgement_a_stop_gave_up_that_discord_never_took_is_answered_in_the_channel(
        fake: FakeDiscord) -> None:
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake, interaction_window=0.3)
    await adapter.start(sink, COMMANDS)
    try:
        fake.hold(CALLBACK)  # never answered: Discord did not take it (the user saw "did not respond")
        fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        await adapter.stop_within(1.0)
        [command] = got
        sent = await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                           idempotency_key="c1:0", reply_token=command.reply_token))
        [answer] = fake.bot_messages(command.chat_id)
        assert (answer.id, answer.content, answer.interaction_id) == (sent.message_id, "No subagents.", None)
    finally:
        await adapter.close()
        await join_heartbeat_threads()


async def test_an_acknowledgement_taken_just_after_the_first_look_is_answered_in_place(fake: FakeDiscord) -> None:
    """Discord may take the acknowledgement a moment after the answer first asks (the request was on its
    way): until its 3 seconds are over, "not acknowledged" is no final word, and the answer waits them out."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake, interaction_window=1.0)
    await adapter.start(sink, COMMANDS)
    try:
        release = fake.hold(CALLBACK)
        interaction = fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        await adapter.stop_within(1.0)
        [command] = got
        original = "GET /webhooks/{application_id}/{token}/messages/{message_id}"
        answering = asyncio.create_task(adapter.send(Outbound(
            command.chat_id, None, "No subagents.", kind="command", idempotency_key="c1:0",
            reply_token=command.reply_token)))
        await fake.wait_for(lambda: [c.status for c in fake.calls_to(original)] == [404])
        release.set()
        await fake.wait_for(lambda: fake.interactions[interaction]["responses"] == [5])
        sent = await answering
        [answer] = fake.bot_messages(command.chat_id)
        assert (answer.id, answer.content, answer.flags & FLAG_LOADING) == (sent.message_id, "No subagents.", 0)
    finally:
        await adapter.close()
        await join_heartbeat_threads()


async def test_a_command_not_taken_whose_acknowledgement_a_stop_gave_up_is_told_so_in_place(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    """Still being handed over when the stop's time ran out, and its acknowledgement given up: the stop's answer
    was only logged (no interaction to answer through) while Discord, which had taken the acknowledgement,
    showed "thinking…" for 15 minutes. (Cut off midway, it is told it may come after the restart:
    `test_discord_command_cut_off`.)"""
    never, handed = asyncio.Event(), asyncio.Event()

    async def sink(inbound: Inbound) -> None:
        handed.set()  # after its acknowledgement was given up
        await never.wait()  # the database never takes it

    adapter = adapter_for(fake)
    await adapter.start(sink, COMMANDS)
    try:
        release = fake.hold(CALLBACK)
        interaction = fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: fake.calls_to(CALLBACK))
        stopping = asyncio.create_task(adapter.stop_within(0.5))
        await asyncio.wait_for(handed.wait(), 5)
        release.set()
        await stopping
        channel = fake.interactions[interaction]["channel_id"]
        assert fake.interactions[interaction]["responses"] == [5]
        [told] = fake.bot_messages(channel)
        assert told.content == MAY_BE_TAKEN.format(command="/agents") and thinking(fake, channel) == []
    finally:
        never.set()
        await adapter.close()
        await join_heartbeat_threads()
