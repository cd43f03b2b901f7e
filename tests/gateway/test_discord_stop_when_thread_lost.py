"""A Discord thread deleted, or a private one the bot was removed from, while its work runs: the real `Gateway`
with a `DiscordAdapter` (real discord.py) on the loopback `FakeDiscord`. That thread's running turn and subagents
are stopped as /stop stops them there, its waiting messages dropped, without a word and with one log line naming
the channel and the thread; the channel's own work and another thread's go on."""

from __future__ import annotations

import logging

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.sessions import GatewaySession
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord
from tests.gateway import test_discord_stop_when_chat_lost as channel_lost
from tests.gateway.test_discord_stop_when_chat_lost import ALICE, BOB, CHANNEL, GUILD, LOST, lines
from tests.hanging_children import HANGING_CHILDREN

THREAD, OTHER_THREAD = 800, 801

fake = fake_discord()
gateways = channel_lost.gateways


def waiting_children(model: ScriptedModel) -> int:
    """How many children wait, for good, in their second model call."""
    return sum(1 for r in model.requests if r.metadata.get("goal") and r.iteration >= 1)


def session_in(gateway: Gateway, thread: int | None) -> GatewaySession:
    (session,) = [s for s in gateway.sessions if s.thread_id == (None if thread is None else str(thread))]
    return session


async def working_everywhere(fake: FakeDiscord, gateway: Gateway, model: ScriptedModel, *,
                             private: bool = False) -> tuple[GatewaySession, GatewaySession, GatewaySession]:
    """A turn with two children hanging in ``THREAD`` (private with ``private``), another member's message waiting
    behind it; the same, without the waiting message, in ``OTHER_THREAD`` and in the channel itself."""
    places = [(THREAD, private), (OTHER_THREAD, False), (None, False)]
    for count, (thread, secret) in enumerate(places, start=1):
        fake.push_guild_message(GUILD, CHANNEL, ALICE, "please delegate this", mention_bot=True, thread_id=thread,
                                private_thread=secret)
        await fake.wait_for(lambda: waiting_children(model) == count * len(HANGING_CHILDREN["tasks"]))
    lost, *others = (session_in(gateway, thread) for thread, _ in places)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "and one more thing", mention_bot=True, thread_id=THREAD)
    await fake.wait_for(lambda: lost.queue)
    return lost, *others


@pytest.mark.parametrize("how, why", [("deleted", "the thread was deleted"),
                                      ("left", "the bot was removed from the private thread")])
async def test_a_thread_lost_stops_that_threads_work_alone(fake, gateways, caplog, how, why):
    caplog.set_level(logging.INFO)
    gateway, model = await gateways()
    lost, other, channel = await working_everywhere(fake, gateway, model, private=how == "left")
    children = gateway.host.children
    if how == "deleted":
        fake.delete_channel(THREAD)  # THREAD_DELETE
    else:
        fake.remove_from_thread(THREAD)  # THREAD_MEMBERS_UPDATE naming the bot
    await fake.wait_for(lambda: lost.running is None and not children.children(lost.session_id))
    assert [c.state.value for c in children.recent(lost.session_id)] == ["INTERRUPTED", "INTERRUPTED"]
    assert not lost.queue  # dropped: its answer would be refused, after a model call
    assert lines(caplog) == [f"discord chat {CHANNEL} thread {THREAD} {LOST} ({why}): stopped the running turn and"
                             " 2 subagents; dropped 1 waiting message"]
    for session in (other, channel):  # untouched
        assert session.running is not None
        assert len(children.children(session.session_id)) == 2
    assert fake.bot_messages(CHANNEL) == [] and fake.bot_messages(OTHER_THREAD) == []  # not a word anywhere
    assert fake.bot_messages(THREAD) == []
