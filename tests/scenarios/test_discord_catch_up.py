"""Discord's catch-up at start (`platforms.discord_catch_up`) with the real `Gateway`: a message that
comes live while the catch-up is still asking for history reaches the adapter twice, once in the
history and once live, and is answered once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import ModelRequest
from gateway.store import inbox
from gateway.testing import make_config, settled, start_gateway
from platforms import discord_catch_up
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads

USER = 42
HISTORY = "GET /channels/{channel_id}/messages"
EPHEMERAL = 64
"""A message flag: the interaction's user alone sees it."""


def echo(request: ModelRequest) -> dict:
    return {"text": f"echo: {request.messages[-1]['content']}"}


async def answered_then_down(tmp_path, fake: FakeDiscord, **sections):
    """A gateway that answered one DM and stopped: its config, for the next start, and the DM channel."""
    config = make_config(tmp_path, platforms={"discord": {"allow_all": True}}, **sections)
    dm = fake.dm_channel(USER)
    gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
    try:
        fake.push_dm(USER, "before")
        await fake.wait_for(lambda: fake.bot_messages(dm))
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    return config, dm


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
        await join_heartbeat_threads()
    assert fake.errors == []


async def test_a_message_both_caught_up_and_heard_live_is_answered_once(
        tmp_path, fake: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gateway")
    caplog.set_level(logging.DEBUG, logger="gateway.app")  # where a redelivery is told
    # Queued: by default the live message would interrupt the turn of the one caught up before it.
    config, dm = await answered_then_down(tmp_path, fake, display={"busy_input_mode": "queue"})
    fake.push_dm(USER, "while down")
    release = fake.hold(HISTORY)  # the catch-up's history request is slow to answer...
    adapter = adapter_for(fake)
    gateway = await start_gateway(config, [adapter], script={"parent": echo})
    try:
        await fake.wait_for(lambda: fake.calls_to(HISTORY))
        live = int(fake.push_dm(USER, "meanwhile"))  # ...and this comes live meanwhile: the history has it too
        await fake.wait_for(lambda: any(m.id == live for m in adapter._require_client().cached_messages))
        release.set()
        await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 3)
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert [m.content for m in fake.bot_messages(dm)] == ["echo: before", "echo: while down", "echo: meanwhile"]
    assert f"dropping duplicate discord event {live}" in caplog.messages  # it did come twice


async def test_a_slash_command_waiting_for_the_catch_up_when_the_gateway_stops_is_answered_to_send_it_again(
        tmp_path, fake: FakeDiscord) -> None:
    # Live events wait for the catch-up, and a stop drops them: a message is read back at the next
    # start, but Discord keeps an interaction in no history, so the command vanished, "thinking…".
    config, dm = await answered_then_down(tmp_path, fake)
    release = fake.hold(HISTORY)  # the catch-up's history request is slow to answer
    gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
    try:
        await fake.wait_for(lambda: fake.calls_to(HISTORY))
        command = fake.push_interaction("new", USER)
        await fake.wait_for(lambda: fake.interactions[command]["responses"] == [5])  # "thinking…"
    finally:
        await gateway.stop(grace=0)
        release.set()
    # To the user alone: its "thinking…", which the channel saw, deleted.
    assert [(m.content, m.flags & EPHEMERAL) for m in fake.bot_messages(dm) if m.interaction_id == command] == [
        ("⚠️ Not taken: the bot is restarting. Send `/new` again in a minute.", EPHEMERAL)]


async def test_a_message_whose_read_failed_at_start_is_answered_once_without_a_restart(
        tmp_path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    # The catch-up's read failed (Discord answering 503), and the message waited for the next start.
    monkeypatch.setattr("platforms.discord_catch_up.FIRST_RETRY", 0.05)
    config, dm = await answered_then_down(tmp_path, fake)
    fake.push_dm(USER, "while down")
    fake.fail_next(HISTORY, 503, times=2)
    gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
    try:
        await fake.wait_for(lambda: len(fake.bot_messages(dm)) == 2)
        fake.push_dm(USER, "and now")
        await fake.wait_for(lambda: len(fake.bot_messages(dm)) == 3)
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert len(fake.calls_to(HISTORY)) == 3
    gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
    try:  # recorded as seen: not read back and answered again (live messages wait for the catch-up)
        fake.push_dm(USER, "after the restart")
        await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 4)
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert [m.content for m in fake.bot_messages(dm)] == [
        "echo: before", "echo: while down", "echo: and now", "echo: after the restart"]


def test_the_inbox_remembers_an_event_at_least_as_long_as_the_catch_up_looks_back() -> None:
    # Else a message answered live long ago, found again by a catch-up, would be taken as new.
    assert inbox.RETENTION_SECONDS >= discord_catch_up.MAX_AGE
