"""A Discord slash command from a user the gateway does not serve is refused to that user alone.

The adapter defers a command ("*bot* is thinking…") before the gateway reads who sent it, and Discord fixes
at the deferral who sees what replaces "thinking…": the whole channel. Answered in its place, the refusal
("Sorry — this assistant only answers people its operator has allowed…", naming the stranger's id) showed
to everyone there. Now "thinking…" is deleted and the refusal follows as an ephemeral follow-up (flag 64),
which Discord keeps in no channel history: a lost one is sent again, not looked for there. An allowed
user's answers stay public. The real discord.py client, the real gateway and outbox, against the fake."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.access import REFUSAL
from gateway.app import Gateway
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from gateway.testing import make_config, settled, start_gateway
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FLAG_LOADING, FakeDiscord, FakeMessage
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.gateway.observing import Lookups

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
UNTHINK = "DELETE /webhooks/{application_id}/{token}/messages/{message_id}"
ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
HISTORY = "GET /channels/{channel_id}/messages"
EPHEMERAL = 64
GUILD, CHANNEL, USER, STRANGER = 500, 600, 42, 999
WAIT = 5.0

fake = fake_discord()


@pytest.fixture
async def gateway(tmp_path: Path, fake: FakeDiscord) -> AsyncIterator[Gateway]:
    """The gateway on the fake, serving ``USER`` only."""
    config = make_config(tmp_path, platforms={"discord": {"allowed_users": [str(USER)]}})
    started = await start_gateway(config, [adapter_for(fake)], script={"parent": lambda request: "unused"})
    try:
        yield started
    finally:
        await started.stop(grace=0)
        await join_heartbeat_threads()


def seen_by_all(fake: FakeDiscord, interaction: str) -> list[FakeMessage]:
    """The interaction's messages the channel sees ("thinking…" too, until it is answered or deleted)."""
    return [m for m in fake.bot_messages(CHANNEL) if m.interaction_id == interaction and not m.flags & EPHEMERAL]


def told_alone(fake: FakeDiscord, interaction: str) -> list[str]:
    """What the interaction's user alone was told."""
    return [m.content for m in fake.bot_messages(CHANNEL) if m.interaction_id == interaction and m.flags & EPHEMERAL]


async def history(fake: FakeDiscord, channel: int) -> list[dict]:
    """The channel's messages as Discord serves them to anyone reading it (``GET /channels/{id}/messages``)."""
    async with aiohttp.ClientSession() as session, session.get(
            f"{fake.api_base}/channels/{channel}/messages", headers={"Authorization": f"Bot {fake.token}"}) as got:
        return await got.json(content_type=None)


async def test_a_strangers_slash_command_is_refused_to_them_alone_and_the_channel_sees_nothing(
        fake: FakeDiscord, gateway: Gateway) -> None:
    refused = fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: told_alone(fake, refused))
    await settled(gateway)
    assert told_alone(fake, refused) == [REFUSAL.format(user_id=STRANGER)]
    assert seen_by_all(fake, refused) == []  # its "thinking…" deleted: the channel is left nothing
    assert fake.interactions[refused]["responses"] == [5]
    calls = [c.route for c in fake.calls if c.route in (CALLBACK, UNTHINK, ANSWER, FOLLOW_UP)]
    assert calls == [CALLBACK, UNTHINK, FOLLOW_UP]  # "thinking…" gone before the follow-up, which it took else
    assert fake.calls_to(FOLLOW_UP)[0].body["flags"] == EPHEMERAL
    assert await history(fake, CHANNEL) == []

    # An allowed user's command is answered as ever, in place of its "thinking…", for the channel to see.
    served = fake.push_interaction("agents", USER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: [m for m in seen_by_all(fake, served) if m.content])
    await settled(gateway)
    [answer] = seen_by_all(fake, served)
    assert answer.id == fake.interactions[served]["original"] and not answer.flags & FLAG_LOADING
    assert told_alone(fake, served) == [] and [m["id"] for m in await history(fake, CHANNEL)] == [answer.id]


@contextlib.asynccontextmanager
async def _refusing(fake: FakeDiscord, tmp_path: Path, *,
                    refuse: bool = True) -> AsyncIterator[tuple[Outbox, DiscordAdapter, Inbound, Lookups]]:
    """(the real outbox on an adapter, the adapter, a slash command in a guild channel the gateway refused unless
    not ``refuse``, the lookups)"""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    store, lookups = GatewayStore(tmp_path / "state.db"), Lookups()
    outbox = Outbox(store.outbox, {"discord": adapter}, events=lookups.events)
    await outbox.start()
    try:
        fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: got)
        if refuse:
            adapter.refused(got[0])  # as the gateway tells it (`platforms.base.HearsRefusals`)
        yield outbox, adapter, got[0], lookups
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()


async def _refuse(outbox: Outbox, command: Inbound) -> str:
    outbox.enqueue("discord", command.chat_id, command.thread_id, REFUSAL.format(user_id=STRANGER), kind="command",
                   key="refused", reply_token=command.reply_token)
    return await outbox.wait_sent("refused:0", timeout=WAIT)


async def test_a_private_answer_whose_answer_was_lost_is_sent_again_not_looked_for_in_the_history(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # Discord stored the follow-up, and answered 500: an ephemeral message is in no history to find it in.
    async with _refusing(fake, tmp_path) as (outbox, _, command, lookups):
        interaction = command.event_id
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        sent = await _refuse(outbox, command)
    assert lookups.outcomes == [] and fake.calls_to(HISTORY) == []
    assert told_alone(fake, interaction) == [REFUSAL.format(user_id=STRANGER)] * 2  # to the user alone, twice
    assert seen_by_all(fake, interaction) == [] and fake.bot_messages(CHANNEL)[-1].id == sent
    assert len(fake.calls_to(UNTHINK)) == 2  # tried again: "thinking…" found gone already, as wanted


async def test_a_private_follow_up_below_a_public_answer_whose_answer_was_lost_is_not_looked_for(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # A public answer first, then a word for the user alone (as `tell_not_handled` adds below an answer): a
    # follow-up is looked for in the channel's history, where an ephemeral one never is.
    async with _refusing(fake, tmp_path, refuse=False) as (outbox, adapter, command, lookups):
        outbox.enqueue("discord", command.chat_id, None, "For all.", kind="command", key="c1",
                       reply_token=command.reply_token)
        await outbox.wait_sent("c1:0", timeout=WAIT)
        adapter.refused(command)
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        await _refuse(outbox, command)
    assert lookups.outcomes == [] and fake.calls_to(HISTORY) == []
    assert [m.content for m in seen_by_all(fake, command.event_id)] == ["For all."]
    assert told_alone(fake, command.event_id) == [REFUSAL.format(user_id=STRANGER)] * 2


async def test_the_fake_keeps_ephemeral_messages_out_of_the_channels_history_and_the_bots_gateway(
        fake: FakeDiscord, tmp_path: Path) -> None:
    async with _refusing(fake, tmp_path) as (outbox, _, command, _):
        sent = await _refuse(outbox, command)
        assert [m.id for m in fake.bot_messages(CHANNEL)] == [sent]
        assert await history(fake, CHANNEL) == []
        assert sent not in fake._dispatched  # no MESSAGE_CREATE: Discord shows it to its user alone
