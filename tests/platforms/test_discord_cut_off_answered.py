"""A slash command whose hand-over a stop cuts off after the gateway answered it (`platforms.discord_commands`).

The gateway's sink records a command, then routes it, and routing may answer it (`/stop`, `/new`) before the
sink returns; a stop that cancels the sink then told the user, in place of "thinking…", that the command may be
answered after the restart (`MAY_BE_TAKEN`): the edit of "@original" replaced the answer already posted there.
The real discord.py client against the loopback fake."""

from __future__ import annotations

import asyncio

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.fakes.discord import FakeDiscord
from platforms.not_recorded import MAY_BE_TAKEN
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

USER = 42
COMMANDS = [CommandSpec("new", "Start a new session")]
ORIGINAL = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"

fake = fake_discord()


def answer_of(fake: FakeDiscord, interaction: str) -> list[str]:
    """What shows in place of the interaction's "thinking…"."""
    original = fake.interactions[interaction]["original"]
    return [m.content for m in fake.bot_messages(fake.dm_channel(USER)) if m.id == original]


def reply(command: Inbound, text: str, part: int = 0) -> Outbound:
    return Outbound(command.chat_id, None, text, kind="command", idempotency_key=f"c1:{part}",
                    reply_token=command.reply_token)


async def test_a_command_answered_before_a_stop_cuts_its_hand_over_off_keeps_its_answer(fake: FakeDiscord) -> None:
    adapter = adapter_for(fake)
    routed: list[Inbound] = []

    async def answers_then_routes_on(inbound: Inbound) -> None:
        await adapter.send(reply(inbound, "New session started."))
        await adapter.send(reply(inbound, "Ask away.", 1))  # a follow-up
        routed.append(inbound)
        await asyncio.Event().wait()  # the rest of the routing, which the stop cuts off

    await adapter.start(answers_then_routes_on, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: routed)
        await adapter.stop_within(0.3)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert answer_of(fake, interaction) == ["New session started."]
    assert [c.body["content"] for c in fake.calls_to(ORIGINAL)] == ["New session started."]
    assert [m.content for m in fake.bot_messages(fake.dm_channel(USER))] == ["New session started.", "Ask away."]


async def test_a_command_whose_answer_is_on_its_way_as_a_stop_cuts_it_off_keeps_its_answer(fake: FakeDiscord) -> None:
    # The outbox sends apart from the sink: its edit of "thinking…" is under way when the stop tells its word.
    # discord.py sends an interaction's webhook calls one at a time, so the stop's edit went right after it.
    adapter = adapter_for(fake)
    answering: list[asyncio.Task[object]] = []
    release = fake.hold(ORIGINAL)

    async def answer_under_way(inbound: Inbound) -> None:
        answering.append(asyncio.ensure_future(adapter.send(reply(inbound, "Stopped."))))
        await asyncio.Event().wait()

    await adapter.start(answer_under_way, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: fake.calls_to(ORIGINAL))
        stopping = asyncio.ensure_future(adapter.stop_within(0.3))
        await fake.wait_for(lambda: adapter._swept)  # the stop is telling what became of the commands
        release.set()
        await asyncio.wait_for(answering[0], 5)
        await stopping
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [c.body["content"] for c in fake.calls_to(ORIGINAL)] == ["Stopped."]
    assert answer_of(fake, interaction) == ["Stopped."]


async def test_a_command_cut_off_before_any_answer_is_still_told_it_may_come(fake: FakeDiscord) -> None:
    adapter = adapter_for(fake)
    routed: list[Inbound] = []

    async def routes_on(inbound: Inbound) -> None:
        routed.append(inbound)
        await asyncio.Event().wait()

    await adapter.start(routes_on, COMMANDS)
    try:
        interaction = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: routed)
        await adapter.stop_within(0.3)
        assert answer_of(fake, interaction) == [MAY_BE_TAKEN.format(command="/new")]
        await adapter.send(reply(routed[0], "New session started."))  # after the restart, say: it replaces the word
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert answer_of(fake, interaction) == ["New session started."]
