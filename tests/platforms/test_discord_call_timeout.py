"""Every REST call of the Discord adapter, the login's included, is bounded by its ``call_timeout``
(`platforms.discord_calls.CALL_TIMEOUT`, 30 s), an upload more by its size: discord.py opens its session without a
timeout, so a Discord that took a call and went silent held a post, an edit, a typing refresh, a command's answer or
the command sync at start for aiohttp's 300 s. A call cut off is a `NetworkError` saying so: a post is looked up
before it is sent again, and is in the chat once. The real discord.py against the loopback FakeDiscord, one route
held unanswered (``hold``), the bound shrunk."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.config import config_from_mapping
from gateway.outbox import Outbox
from gateway.startup_errors import explain
from gateway.store import GatewayStore
from platforms import discord_calls
from platforms.base import CommandSpec, NetworkError, Outbound, OutboundFile
from platforms.discord import DiscordAdapter, DiscordStartError
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.gateway.observing import Lookups
from tests.platforms.sink import Sink

BOUND = 1.0
"""The shrunk ``call_timeout``: wide enough for every loopback call a busy machine answers."""
WAIT = 10.0
"""Far past `BOUND`, far short of aiohttp's 300 s."""
NO_ANSWER = f"no answer from the Discord API within {BOUND:g}s"
SEND = "POST /channels/{channel_id}/messages"
USER = 42

fake = fake_discord()


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
async def discord(fake: FakeDiscord, sink: Sink) -> AsyncIterator[DiscordAdapter]:
    adapter = adapter_for(fake, call_timeout=BOUND)
    await adapter.start(sink, [CommandSpec("stop", "stop")])
    yield adapter
    await adapter.stop()
    await join_heartbeat_threads()


async def test_a_post_discord_went_silent_on_ends_at_the_bound_is_looked_up_and_in_the_chat_once(
        tmp_path: Path, fake: FakeDiscord, sink: Sink, discord: DiscordAdapter) -> None:
    clock = FakeClock(autojump=False)  # the retry waits until Discord has posted the held call
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"discord": discord}, events=lookups.events, clock=clock)
    await outbox.start()
    dm = fake.dm_channel(USER)
    held = fake.hold(SEND)
    loop = asyncio.get_running_loop()
    try:
        outbox.enqueue("discord", dm, None, "the answer", kind="reply", key="t1")
        await fake.wait_for(lambda: fake.calls_to(SEND))
        began = loop.time()
        await clock.until_sleeping(timeout=WAIT)  # the outbox backs off: the call has ended
        assert BOUND * 0.9 <= loop.time() - began < WAIT
        row = store.outbox.message("t1:0")
        assert row is not None and row.status == "pending" and NO_ANSWER in (row.last_error or "")
        held.set()  # Discord took the post after all: its answer is what the call gave up on
        await fake.wait_for(lambda: fake.bot_messages(dm))
        await fake.wait_for(lambda: discord._posted.get(fake.bot_messages(dm)[0].nonce))  # its MESSAGE_CREATE
        sending = asyncio.ensure_future(outbox.wait_sent("t1:0", timeout=WAIT))
        while not sending.done():
            clock.advance(1.0)
            await asyncio.sleep(0.005)
        message_id = await sending
        # The gateway's WebSocket, open all along, is not cut by the bound.
        fake.push_dm(USER, "still there?")
        await fake.wait_for(lambda: sink.inbound)
    finally:
        held.set()
        await outbox.close()
        store.close()
    assert [m.id for m in fake.bot_messages(dm)] == [message_id]
    assert len(fake.calls_to(SEND)) == 1 and lookups.outcomes == ["discord:found"]
    assert [i.text for i in sink.inbound] == ["still there?"] and fake.connections_opened == 1


@pytest.mark.parametrize("route", ["PATCH /channels/{channel_id}/messages/{message_id}",
                                   "POST /channels/{channel_id}/typing"], ids=["edit", "typing"])
async def test_an_edit_or_typing_discord_went_silent_on_is_a_network_error_at_the_bound(
        fake: FakeDiscord, discord: DiscordAdapter, route: str) -> None:
    dm = fake.dm_channel(USER)
    sent = await discord.send(Outbound(dm, None, "working…", idempotency_key="t1:0"))
    held = fake.hold(route)
    try:
        async with asyncio.timeout(WAIT):
            with pytest.raises(NetworkError, match=NO_ANSWER):
                if route.startswith("PATCH"):
                    await discord.edit(dm, None, sent.message_id, "done")
                else:
                    await discord.typing(dm, None)
    finally:
        held.set()


async def test_a_commands_answer_discord_went_silent_on_is_a_network_error_at_the_bound(
        fake: FakeDiscord, sink: Sink, discord: DiscordAdapter) -> None:
    """The answers' own session (`platforms.discord_answers`): a follow-up is then looked for before it is sent
    again, as after a 5xx (`platforms.discord_sent`)."""
    fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: sink.inbound)
    [command] = sink.inbound
    first = Outbound(command.chat_id, None, "Stopped.", kind="command", idempotency_key="c1:0",
                     reply_token=command.reply_token)
    await discord.send(first)
    held = fake.hold("POST /webhooks/{application_id}/{token}")
    try:
        async with asyncio.timeout(WAIT):
            with pytest.raises(NetworkError, match=NO_ANSWER):
                await discord.send(Outbound(command.chat_id, None, "More.", kind="command", idempotency_key="c2:0",
                                            reply_token=command.reply_token))
    finally:
        held.set()


async def test_an_upload_is_given_time_for_its_size(fake: FakeDiscord, discord: DiscordAdapter, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discord_calls, "SLOWEST_UPLOAD", 100_000)  # a second more for this file
    path = tmp_path / "report.bin"
    path.write_bytes(b"x" * 100_000)
    held = fake.hold(SEND)
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        async with asyncio.timeout(WAIT):
            with pytest.raises(NetworkError, match=f"within {BOUND + 1:g}s"):
                await discord.send_file(Outbound(fake.dm_channel(USER), None, "", idempotency_key="f1:0"),
                                        OutboundFile(str(path), "report.bin", 100_000))
    finally:
        held.set()
    assert loop.time() - began >= (BOUND + 1) * 0.9


async def test_a_command_sync_discord_went_silent_on_does_not_hold_the_start(
        fake: FakeDiscord, sink: Sink, caplog: pytest.LogCaptureFixture) -> None:
    held = fake.hold("PUT /applications/{application_id}/commands")
    adapter = adapter_for(fake, call_timeout=BOUND)
    try:
        async with asyncio.timeout(WAIT):
            with caplog.at_level(logging.ERROR, logger="platforms.discord"):
                await adapter.start(sink, [CommandSpec("stop", "stop")])
        fake.push_dm(USER, "hello")
        await fake.wait_for(lambda: sink.inbound)
    finally:
        held.set()
        await adapter.stop()
        await join_heartbeat_threads()
    assert "slash commands not registered globally" in caplog.text and NO_ANSWER in caplog.text


async def test_a_login_call_past_its_own_bound_gives_the_start_line_of_no_answer(fake: FakeDiscord) -> None:
    held = fake.hold("GET /users/@me")
    adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory,
                             login_timeout=WAIT, call_timeout=BOUND)
    try:
        with pytest.raises(DiscordStartError) as failed:
            async with asyncio.timeout(WAIT):
                await adapter.start(Sink())
    finally:
        held.set()
        await adapter.stop()
        await join_heartbeat_threads()
    config = config_from_mapping({"platforms": {"discord": {"enabled": True, "allow_all": True, "token": fake.token,
                                                            "api_base": fake.api_base}}}).config
    assert f"(cannot log in: {NO_ANSWER})" in explain(failed.value, config)
