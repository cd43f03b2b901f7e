"""What a stop of `DiscordAdapter` tells the user of a slash command whose hand-over it cuts off.

The gateway's sink records a command before it routes it, and the next start handles every event
recorded and not settled: a command the sink still had when the stop's time ran out may have been
recorded, and then is answered after the restart. Answered "Not taken: send it again" in place of its
"thinking…", its user was told no and then got an answer (twice, once they sent it again). The real
discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio
import logging

import pytest

from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from platforms.not_recorded import MAY_BE_TAKEN, NOT_TAKEN
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.sqlite_errors import full_disk

USER = 42
EPHEMERAL = 64
COMMANDS = [CommandSpec("new", "Start a new session"), CommandSpec("agents", "List running subagents")]

fake = fake_discord()


class RecordsThenRoutes:
    """The gateway's sink as it behaves when routing a command takes long (its chat's earlier event still
    being handled, a slow commit): the event is in the inbox at once, the sink returns much later."""

    def __init__(self) -> None:
        self.inbox: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.inbox.append(inbound)
        await asyncio.Event().wait()


def answer_of(fake: FakeDiscord, interaction: str) -> list[str]:
    """What shows in place of the interaction's "thinking…"."""
    original = fake.interactions[interaction]["original"]
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER)) if m.id == original]


def told_alone(fake: FakeDiscord, interaction: str) -> list[str]:
    """What the interaction's user alone was told, its "thinking…" (which the channel saw) deleted."""
    assert answer_of(fake, interaction) == []
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER))
            if m.interaction_id == interaction and m.flags & EPHEMERAL]


async def test_a_command_whose_hand_over_a_stop_cuts_off_is_told_it_may_come_after_the_restart(
        fake: FakeDiscord) -> None:
    sink = RecordsThenRoutes()
    adapter = adapter_for(fake)
    await adapter.start(sink, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: sink.inbox)
        await adapter.stop_within(0.3)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [i.text for i in sink.inbox] == ["/new"]  # recorded: the next start answers it
    assert answer_of(fake, interaction) == [MAY_BE_TAKEN.format(command="/new")]
    assert fake.interactions[interaction]["responses"] == [5]  # deferred, then that answer in its place


async def test_a_command_queued_behind_one_cut_off_is_still_told_it_was_not_taken(fake: FakeDiscord) -> None:
    # Never handed over: surely not recorded, and Discord never sends it again.
    sink = RecordsThenRoutes()
    adapter = adapter_for(fake)
    await adapter.start(sink, COMMANDS)
    try:
        first = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: sink.inbox)
        second = fake.push_interaction("agents", USER)
        await fake.wait_for(lambda: adapter._queue.qsize() == 1)
        await adapter.stop_within(0.3)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [i.text for i in sink.inbox] == ["/new"]
    assert answer_of(fake, first) == [MAY_BE_TAKEN.format(command="/new")]
    assert told_alone(fake, second) == [NOT_TAKEN.format(command="/agents")]


async def test_a_command_a_stop_cuts_off_between_two_refused_hand_overs_is_still_told_it_was_not_taken(
        fake: FakeDiscord) -> None:
    # The store refused it, and the stop came while it waited to be handed over again: not recorded. The
    # stop's one last try is refused too.
    tries = 0

    async def refusing(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        raise full_disk()

    adapter = adapter_for(fake)
    await adapter.start(refusing, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: tries >= 1)
        await adapter.stop_within(0.3)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert told_alone(fake, interaction) == [NOT_TAKEN.format(command="/new")]


async def test_a_command_cut_off_is_logged_as_maybe_answered_after_the_restart(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    sink = RecordsThenRoutes()
    adapter = adapter_for(fake)
    await adapter.start(sink, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: sink.inbox)
        with caplog.at_level(logging.INFO, logger="platforms.discord"):
            await adapter.stop_within(0.3)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    lines = [r.getMessage() for r in caplog.records if r.name == "platforms.discord"]
    assert not any("telling the user to send it again" in line for line in lines)
    assert f"discord: /new from user {USER} (interaction {interaction}) was still being handed over when the" \
           " gateway stopped; it is answered after the restart if the gateway recorded it: telling the user so" \
           in lines
