"""Which of a Discord slash command's answers its user alone sees, and which the channel: as each part was journaled.

- The gateway's answer to a command, journaled for all, and then its word that it could not handle the command, for
  the user alone (`discord_commands.tell_not_handled`): the answer went as the interaction now was, ephemeral, in
  the process that failed, and in the channel after a restart; past the token's 15 minutes it was not sent at all.
  Now each part goes as journaled, for all, in this process and after a restart alike.
- A stranger's command whose acknowledgement Discord refused (rate limited past its 3 seconds) was handed over
  without its token, and the gateway's refusal, naming the stranger, was posted in the channel. Now it keeps its
  token, and the refusal, for its user alone, is not sent at all, with a line in the log; also after a restart.

The real discord.py client, outbox and state file, against the fake."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.access import REFUSAL
from gateway.app import Gateway
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from gateway.testing import make_config, settled, start_gateway
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord, FakeMessage
from platforms.not_recorded import NOT_HANDLED
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
WEBHOOK_CALLS = ("POST /webhooks/{application_id}/{token}",
                 *(f"{verb} /webhooks/{{application_id}}/{{token}}/messages/{{message_id}}"
                   for verb in ("GET", "PATCH", "DELETE")))
EPHEMERAL = 64
GUILD, CHANNEL, USER, STRANGER = 500, 600, 42, 999
ANSWER = "No subagents are running."
WAIT = 5.0

fake = fake_discord()


def for_all(fake: FakeDiscord) -> list[str]:
    """The bot's messages the channel sees, "thinking…" left out."""
    return [m.content for m in fake.bot_messages(CHANNEL) if not m.flags & EPHEMERAL and m.content]


def alone(fake: FakeDiscord) -> list[FakeMessage]:
    return [m for m in fake.bot_messages(CHANNEL) if m.flags & EPHEMERAL]


@contextlib.asynccontextmanager
async def failing(fake: FakeDiscord, path: Path, *, start: bool = True,
                  answer: bool = True) -> AsyncIterator[tuple[Outbox, DiscordAdapter]]:
    """A process of the gateway's, as far as this takes: the outbox on the state file ``path`` (started unless not
    ``start``: what it journals waits for the next process) and the adapter, whose sink journals a command's
    answer (unless not ``answer``) for all and then fails on it. Its end is a death's, for the outbox."""
    store = GatewayStore(path)
    outboxes: list[Outbox] = []

    async def sink(inbound: Inbound) -> None:
        if answer and inbound.is_command:  # the routing answered; then something failed
            outboxes[0].enqueue("discord", inbound.chat_id, inbound.thread_id, ANSWER, kind="command", key="answer",
                                reply_token=inbound.reply_token)
        raise RuntimeError("a bug the command trips")

    adapter = adapter_for(fake)
    outboxes.append(Outbox(store.outbox, {"discord": adapter}))
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    if start:
        await outboxes[0].start()
    try:
        yield outboxes[0], adapter
    finally:
        await outboxes[0].close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()


async def _failed_on(fake: FakeDiscord) -> None:
    """A served user's command, answered and then failed on: once they are told so, to them alone."""
    fake.push_interaction("agents", USER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: alone(fake))


async def test_an_answer_journaled_for_all_before_the_command_failed_is_still_for_all(
        fake: FakeDiscord, tmp_path: Path) -> None:
    async with failing(fake, tmp_path / "state.db", start=False) as (outbox, _):
        await _failed_on(fake)
        await outbox.start()  # after the word for the user alone made the interaction's answers private
        assert await outbox.wait_sent("answer:0", timeout=WAIT) is not None
    assert for_all(fake) == [ANSWER]
    assert [m.content for m in alone(fake)] == [NOT_HANDLED.format(command="/agents")]


async def test_an_answer_journaled_for_all_before_the_command_failed_is_for_all_after_a_restart_too(
        fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with failing(fake, path, start=False):  # gone before it sent the answer
        await _failed_on(fake)
    async with failing(fake, path) as (outbox, _):
        assert await outbox.wait_sent("answer:0", timeout=WAIT) is not None
    assert for_all(fake) == [ANSWER]
    assert [m.content for m in alone(fake)] == [NOT_HANDLED.format(command="/agents")]


async def test_an_answer_for_all_past_the_tokens_15_minutes_goes_to_the_channel_though_the_command_failed(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # Not kept to the user as the interaction had become: with no way left to them alone, it was not sent at all.
    async with failing(fake, tmp_path / "state.db", start=False) as (outbox, _):
        await _failed_on(fake)
        fake.clock = lambda: time.monotonic() + 16 * 60
        await outbox.start()
        assert await outbox.wait_sent("answer:0", timeout=WAIT) is not None
    assert for_all(fake) == [ANSWER]


async def test_a_served_users_command_discord_did_not_acknowledge_is_told_in_the_channel_it_failed(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # As before: the word names no one, and Discord told its user only that the application did not respond.
    fake.fail_next(CALLBACK, 429, retry_after=3600)
    async with failing(fake, tmp_path / "state.db", answer=False):
        fake.push_interaction("agents", USER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: for_all(fake))
    assert for_all(fake) == [NOT_HANDLED.format(command="/agents")] and alone(fake) == []
    assert [c.route for c in fake.calls if c.route in WEBHOOK_CALLS] == []  # nothing tried through the interaction


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


async def test_a_strangers_command_discord_did_not_acknowledge_is_refused_nowhere_not_in_the_channel(
        fake: FakeDiscord, gateway: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next(CALLBACK, 429, retry_after=3600)  # past Discord's 3 seconds: not waited for
    with caplog.at_level(logging.INFO):
        fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: [r for r in caplog.records if r.getMessage() == f"refused discord user {STRANGER}"])
        await settled(gateway)
    assert fake.bot_messages(CHANNEL) == []  # their id named to no one
    assert any("not posted in the channel instead" in r.getMessage() for r in caplog.records
               if r.name == "gateway.outbox")


async def test_a_strangers_refusal_left_at_a_restart_is_not_posted_in_the_channel_after_it(
        fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    fake.fail_next(CALLBACK, 429, retry_after=3600)
    adapter, store = adapter_for(fake), GatewayStore(path)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:  # gone before it sent the refusal
        fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: got)
        [command] = got
        adapter.refused(command)  # as the gateway tells it, and journals its refusal
        Outbox(store.outbox, {"discord": adapter}).enqueue(
            "discord", command.chat_id, command.thread_id, REFUSAL.format(user_id=STRANGER), kind="command",
            key="refused", reply_token=command.reply_token)
    finally:
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()
    async with failing(fake, path, answer=False) as (outbox, _):
        assert await outbox.wait_sent("refused:0", timeout=WAIT) is None  # failed
    assert fake.bot_messages(CHANNEL) == []


async def test_a_command_discord_did_not_acknowledge_left_at_a_stop_is_told_nothing_through_it(
        fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    # Discord told its user the application did not respond: there is no "thinking…" to replace, nor a follow-up
    # Discord would take. Nothing is tried, and no "could not tell" is logged.
    adapter = adapter_for(fake)
    adapter.bind_last_seen({fake.dm_channel(USER): "1"}, lambda channel, message: None, lambda channel: None)
    fake.hold("GET /channels/{channel_id}/messages")  # the catch-up's read, unanswered: live events wait behind it
    fake.fail_next(CALLBACK, 429, retry_after=3600)
    await adapter.start(lambda inbound: asyncio.sleep(0), [CommandSpec("new", "Start a new session")])
    try:
        with caplog.at_level(logging.INFO, logger="platforms.discord"):
            fake.push_interaction("new", USER)
            await fake.wait_for(lambda: [r for r in caplog.records if "could not acknowledge" in r.getMessage()])
            await adapter.stop_within(0.2)
    finally:
        await adapter.close()
        await join_heartbeat_threads()
    assert any("was not recorded before the gateway stopped" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if "could not tell" in r.getMessage()]
    assert [c.route for c in fake.calls if c.route in WEBHOOK_CALLS] == []
