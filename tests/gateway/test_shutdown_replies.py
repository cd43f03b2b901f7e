"""A turn that ends during a graceful stop has its reply sent within the stop's grace (`Gateway.stop`), on
each platform through its real SDK and loopback fake: the stop first ends the adapter's intake (no new
events), and the client the reply goes out by stays open until the outbox is flushed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent import ModelRequest, ModelResponse
from gateway.testing import make_config, start_gateway
from platforms.base import LAST_CALLS_FLOOR, Adapter, NetworkError, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import join_heartbeat_threads

GRACE = 5.0
"""Far more than the turn needs once the model answers: the reply does not wait for the grace to end."""
ANSWER = "done: the report is written"
SEND = "POST /channels/{channel_id}/messages"
WAIT = 5.0


class AnswersWhenLet:
    """A model that answers only once the test lets it (``go``): a turn still running as the stop begins."""

    name, context_window, supports_vision = "answers-when-let", 100_000, False

    def __init__(self) -> None:
        self.called, self.go = asyncio.Event(), asyncio.Event()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.called.set()
        await self.go.wait()
        return ModelResponse(text=ANSWER)


class StoppedWithin:
    """Mixed into an adapter the gateway stops within its grace (`StopsWithin`): ``stopped`` is set once
    that stop has ended its intake."""

    stopped: asyncio.Event

    async def stop_within(self, seconds: float) -> None:
        await super().stop_within(seconds)  # type: ignore[misc]
        self.stopped.set()


class SlackStopped(StoppedWithin, SlackAdapter): ...


class DiscordStopped(StoppedWithin, DiscordAdapter): ...


class TelegramStopped(StoppedWithin, TelegramAdapter): ...


@dataclass
class Platform:
    adapter: Adapter
    config: dict[str, Any]
    say: Callable[[str], Any]
    """A user writes to the bot (awaited when it returns an awaitable)."""
    replies: Callable[[], list[str]]
    """What the bot has in that chat, in order."""
    closed: Callable[[], bool] = lambda: True
    """Whether the adapter's client for sending is closed (one reopened by a send is not)."""
    hold: Callable[[], asyncio.Event] = lambda: asyncio.Event()
    """The platform takes no message until the returned event is set."""
    sending: Callable[[], Awaitable[Any]] = lambda: asyncio.sleep(0)
    """Returns once the bot has sent the reply (whether the platform has answered or not)."""


@contextlib.asynccontextmanager
async def slack() -> AsyncIterator[Platform]:
    async with FakeSlack() as fake:
        adapter = SlackStopped(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        adapter.stopped = asyncio.Event()
        yield Platform(adapter, {"slack": {"allow_all": True}}, say=lambda text: fake.push_dm("U1", text),
                       replies=lambda: [m.get("text", "") for m in fake.messages.get(("DU1", None), [])
                                        if m.get("bot_id")],
                       hold=lambda: fake.hold("chat.postMessage"),
                       sending=lambda: fake.wait_for(lambda: any(
                           c.params.get("text") == ANSWER for c in fake.calls_to("chat.postMessage"))))


@contextlib.asynccontextmanager
async def discord() -> AsyncIterator[Platform]:
    async with FakeDiscord() as fake:
        adapter = DiscordStopped(fake.token, api_base=fake.api_base, client_factory=fake.client_factory,
                                 ready_timeout=5.0)
        adapter.stopped = asyncio.Event()
        dm = fake.dm_channel(42)
        yield Platform(adapter, {"discord": {"allow_all": True}}, say=lambda text: fake.push_dm(42, text),
                       replies=lambda: [m.content for m in fake.bot_messages(dm)],
                       hold=lambda: fake.hold(SEND), sending=lambda: fake.wait_for(lambda: any(
                           (c.body or {}).get("content") == ANSWER for c in fake.calls_to(SEND))))
    await join_heartbeat_threads()


@contextlib.asynccontextmanager
async def telegram() -> AsyncIterator[Platform]:
    async with FakeTelegram() as fake:
        adapter = TelegramStopped(fake.token, api_base=fake.base_url, polling_timeout=10)
        adapter.stopped = asyncio.Event()
        yield Platform(adapter, {"telegram": {"allow_all": True}}, say=lambda text: fake.push_message(42, text),
                       replies=lambda: [m["text"] for m in fake.messages["42"]],
                       # aiogram opens a session again for a send after its close: the stop closes it after the flush
                       closed=lambda: adapter.bot.session._session is None or adapter.bot.session._session.closed)


@pytest.mark.parametrize("platform", [slack, discord, telegram])
async def test_a_reply_written_as_the_stop_begins_is_sent_before_the_stop_returns(tmp_path, platform):
    # Slack and Discord dropped their Web API / REST client as the stop began, with intake: the reply of a
    # turn that ended within the grace (a deploy's SIGTERM while it was being written) was held until the
    # next start, the outbox's flush refused "not started" / "not connected".
    model = AnswersWhenLet()
    async with platform() as chat:
        config = make_config(tmp_path, platforms=chat.config, server={"shutdown_grace_seconds": GRACE})
        gateway = await start_gateway(config, [chat.adapter], model=model)
        stopping: asyncio.Task[None] | None = None
        try:
            said = chat.say("write the report")
            if asyncio.iscoroutine(said):
                await said
            await asyncio.wait_for(model.called.wait(), WAIT)  # the turn runs
            stopping = asyncio.create_task(gateway.stop())
            await asyncio.wait_for(chat.adapter.stopped.wait(), WAIT)  # intake ended: no new event comes in
            model.go.set()
            loop = asyncio.get_running_loop()
            began = loop.time()
            await asyncio.wait_for(asyncio.shield(stopping), GRACE + WAIT)
            took = loop.time() - began
        finally:
            model.go.set()
            if stopping is None:
                await gateway.stop(grace=0)
            elif not stopping.done():
                await asyncio.wait({stopping})
        assert ANSWER in chat.replies() and chat.closed()
        assert took < GRACE  # sent as soon as it was written, not given up at the grace's end


class FailingStop(SlackAdapter):
    """Its stop fails once intake has ended."""

    async def stop_within(self, seconds: float) -> None:
        await super().stop_within(seconds)
        raise RuntimeError("the stop failed")


async def test_an_adapter_whose_stop_failed_is_closed_all_the_same(tmp_path, caplog):
    async with FakeSlack() as fake:
        adapter = FailingStop(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
        gateway = await start_gateway(config, [adapter])
        await gateway.stop(grace=0)
        assert "stopping slack failed" in caplog.messages
        with pytest.raises(NetworkError, match="slack adapter not started"):  # its client closed, not left open
            await adapter.send(Outbound("DU1", None, "after the stop"))


MARGIN = 1.0
"""Room for a loaded 2-core machine."""
FLUSH_WITHOUT_GRACE = 1.0
"""What the outbox's flush gets from a stop with no grace (`Gateway.stop`)."""


@pytest.mark.parametrize("platform", [slack, discord])
async def test_a_stop_with_no_grace_whose_reply_the_platform_does_not_take_keeps_to_its_floors(tmp_path, platform):
    # The adapter's client is closed after the flush now, which gives up on the reply still in flight.
    model = AnswersWhenLet()
    model.go.set()
    async with platform() as chat:
        held = chat.hold()
        config = make_config(tmp_path, platforms=chat.config)
        gateway = await start_gateway(config, [chat.adapter], model=model)
        try:
            said = chat.say("write the report")
            if asyncio.iscoroutine(said):
                await said
            await chat.sending()  # the reply is in the platform's hands, unanswered
        finally:
            loop = asyncio.get_running_loop()
            began = loop.time()
            await gateway.stop(grace=0)
            took = loop.time() - began
            held.set()
        assert took < LAST_CALLS_FLOOR + FLUSH_WITHOUT_GRACE + MARGIN
