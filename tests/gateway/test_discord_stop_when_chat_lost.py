"""The bot removed from a Discord server while a channel's work runs: the real `Gateway` with a `DiscordAdapter`
(real discord.py) on the loopback `FakeDiscord`. The running turn and its subagents are stopped as /stop stops them,
the messages waiting for their turns dropped, without a word in the channel (which takes none) and with one log line
naming the channel; invited back, the channel is answered as always. A server's outage stops nothing."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.hanging_children import children_hanging, delegating_parent, hanging_child

LOST = "can no longer be written to"
GUILD, CHANNEL, ALICE, BOB = 500, 600, 42, 43

fake = fake_discord()


@pytest.fixture
async def gateways(fake, tmp_path) -> AsyncIterator[Callable[[], Awaitable[tuple[Gateway, ScriptedModel]]]]:
    """``start()``: a gateway whose parent delegates two children that hang (`tests.hanging_children`), inline (the
    turn runs as long as its children), a second message waiting for its turn."""
    running: list[Gateway] = []

    async def start() -> tuple[Gateway, ScriptedModel]:
        config = make_config(tmp_path, platforms={"discord": {"allow_all": True}},
                             display={"progress": "off", "interim_assistant_messages": False,
                                      "busy_input_mode": "queue"})
        model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
        running.append(await start_gateway(config, [adapter_for(fake)], model=model))
        return running[-1], model

    yield start
    for gateway in running:
        await gateway.stop(grace=0)
    await join_heartbeat_threads()


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if LOST in r.getMessage()]


async def working(fake: FakeDiscord, gateway: Gateway, model: ScriptedModel):
    """A channel's turn running with two children hanging, and another member's message waiting behind it."""
    fake.push_guild_message(GUILD, CHANNEL, ALICE, "please delegate this", mention_bot=True)
    await children_hanging(model)
    (session,) = gateway.sessions
    fake.push_guild_message(GUILD, CHANNEL, BOB, "and one more thing", mention_bot=True)
    await fake.wait_for(lambda: session.queue)
    return session


async def test_the_bot_removed_from_the_server_stops_the_channels_work_without_a_word(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    gateway, model = await gateways()
    session = await working(fake, gateway, model)
    started = session.session_id
    fake.remove_bot(GUILD)
    children = gateway.host.children
    await fake.wait_for(lambda: session.running is None and not children.children(started))
    await settled(gateway)
    assert [c.state.value for c in children.recent(started)] == ["INTERRUPTED", "INTERRUPTED"]
    assert not session.queue  # dropped: its answer would be refused, after a model call
    assert fake.bot_messages(CHANNEL) == []  # no "Stopped" into a channel that takes nothing
    assert lines(caplog) == [f"discord chat {CHANNEL} {LOST} (the bot was removed from the server): stopped the"
                             " running turn and 2 subagents; dropped 1 waiting message"]
    assert not any(f"user{ALICE}" in r.getMessage() for r in caplog.records)  # the user's name is theirs

    fake.add_bot(GUILD)  # invited back: answered as always
    fake.push_guild_message(GUILD, CHANNEL, ALICE, "hello again", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == ["all done"]
    assert len(lines(caplog)) == 1


async def test_an_outage_of_the_server_stops_nothing(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    gateway, model = await gateways()
    session = await working(fake, gateway, model)
    fake.outage(GUILD)  # GUILD_DELETE with unavailable: true
    fake.push_dm(BOB, "are you there?")  # heard after the outage's event: its DM session answers
    await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(BOB)))
    assert session.running is not None and session.queue
    assert len(gateway.host.children.children(session.session_id)) == 2
    assert lines(caplog) == []
