"""What the user of a Discord slash command sees when the gateway fails on it (a bug it trips, not a full disk).

The adapter logged the failure and dropped the command (`platforms.discord_handover.until_recorded`), as it would
fail alike at every try: nothing answered it, so its interaction showed "thinking…" until its token expired and
then that it failed. It is answered, to its user alone (its "thinking…", which the channel saw, deleted), with the
words Slack's adapter uses (`platforms.not_recorded.NOT_HANDLED`); below the gateway's own answer if the routing
answered before it failed.
The real discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio
import logging

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.fakes.discord import FakeDiscord
from platforms.not_recorded import NOT_HANDLED
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42
COMMANDS = [CommandSpec("new", "Start a new session"), CommandSpec("agents", "List running subagents")]
UNTHINK = "DELETE /webhooks/{application_id}/{token}/messages/{message_id}"
"""The first call of the answer: "thinking…" deleted, so that the word may go to the user alone."""
EPHEMERAL = 64
NOT_HANDLED_NEW = NOT_HANDLED.format(command="/new")

fake = fake_discord()


class Bug(Exception):
    pass


def answer_of(fake: FakeDiscord, interaction: str) -> list[str]:
    """What shows in place of the interaction's "thinking…"."""
    original = fake.interactions[interaction]["original"]
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER)) if m.id == original]


def told_alone(fake: FakeDiscord, interaction: str) -> list[str]:
    """What the interaction's user alone was told (flag 64)."""
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER))
            if m.interaction_id == interaction and m.flags & EPHEMERAL]


def posted(fake: FakeDiscord) -> list[str]:
    """What the bot shows in the DM, but a "thinking…" (no content yet)."""
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER)) if m.content]


async def test_a_command_the_gateway_fails_on_is_answered_that_it_could_not_be_handled(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    adapter = adapter_for(fake)
    handed: list[Inbound] = []

    async def fails_on_new(inbound: Inbound) -> None:
        handed.append(inbound)
        if inbound.text.startswith("/new"):
            raise Bug("the command trips a bug")

    await adapter.start(fails_on_new, COMMANDS)
    try:
        with caplog.at_level(logging.INFO, logger="platforms.discord"):
            interaction = fake.push_interaction("new", USER, args="plan a trip")
            await fake.wait_for(lambda: told_alone(fake, interaction))
            fake.push_interaction("agents", USER)  # the next command is handed over as before
            await fake.wait_for(lambda: len(handed) == 2)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert told_alone(fake, interaction) == [NOT_HANDLED_NEW] and answer_of(fake, interaction) == []
    assert posted(fake) == [NOT_HANDLED_NEW]  # "thinking…" deleted, nothing else
    assert [i.text for i in handed] == ["/new plan a trip", "/agents"]  # handed over once: not tried again
    lines = [r for r in caplog.records if r.name == "platforms.discord"]
    [traceback] = [r.exc_info[1] for r in lines if r.exc_info]  # the bug's, once
    assert isinstance(traceback, Bug)
    assert any(r.getMessage() == f"discord: /new from user {USER} (interaction {interaction}) was dropped, the"
               " gateway failing on it; telling the user" for r in lines)


async def test_a_command_the_gateway_answered_then_failed_on_keeps_its_answer(fake: FakeDiscord) -> None:
    # The sink records, then routes, and routing may answer (`/new`) before it fails: the word comes below.
    adapter = adapter_for(fake)

    async def answers_then_fails(inbound: Inbound) -> None:
        await adapter.send(Outbound(inbound.chat_id, None, "New session started.", kind="command",
                                    idempotency_key="c1:0", reply_token=inbound.reply_token))
        raise Bug("the rest of the routing trips a bug")

    await adapter.start(answers_then_fails, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: len(posted(fake)) == 2)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert answer_of(fake, interaction) == ["New session started."]  # seen by all, as answers are
    assert posted(fake) == ["New session started.", NOT_HANDLED_NEW]
    assert told_alone(fake, interaction) == [NOT_HANDLED_NEW]


async def test_a_stop_waits_for_the_answer_to_a_command_the_gateway_failed_on(fake: FakeDiscord) -> None:
    # The answer goes apart from the events after it; the stop gives it its time for its own answers, as the
    # session it goes by closes after the stop.
    adapter = adapter_for(fake)
    release = fake.hold(UNTHINK)

    async def failing(inbound: Inbound) -> None:
        raise Bug("the command trips a bug")

    await adapter.start(failing, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: fake.calls_to(UNTHINK))
        stopping = asyncio.ensure_future(adapter.stop_within(2.0))
        shown_as_stopped: list[list[str]] = []
        stopping.add_done_callback(lambda _: shown_as_stopped.append(told_alone(fake, interaction)))
        await fake.wait_for(lambda: adapter._swept)  # the stop is telling what became of the commands
        release.set()
        await asyncio.wait_for(stopping, 5)
        await fake.wait_for(lambda: shown_as_stopped)
        assert shown_as_stopped == [[NOT_HANDLED_NEW]]
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
