"""A graceful stop takes at most ``server.shutdown_grace_seconds`` in all: the turns still running
and the outbox's flush share it (`Gateway.stop`), so a supervisor's stop timeout set to the grace
(`docker stop`, systemd) never has to kill the gateway."""

from __future__ import annotations

import asyncio
import uuid

from agent import ModelRequest, ModelResponse
from agent.models.scripted import ScriptedModel
from gateway.app import CLOSE_FLOOR_SECONDS
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, start_gateway
from lifecycle.temporal import _engine as temporal_engine
from lifecycle.temporal.testing import DevServer
from platforms.base import Outbound, Sent
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads, long_backoff
from tests.polling import until

GRACE = 2.0


class HangingModel:
    """A model whose every call waits until it is cancelled: a turn still running at the stop."""

    name, context_window, supports_vision = "hanging", 100_000, False

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.called.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class StuckChat(RecordingAdapter):
    """Sends to chat ``stuck`` never get an answer: a platform that takes the call and hangs."""

    async def send(self, message: Outbound) -> Sent:
        if message.chat_id == "stuck":
            await asyncio.Event().wait()
        return await super().send(message)


async def test_the_running_turns_and_the_outboxs_flush_share_one_grace(tmp_path):
    chat = StuckChat()
    model = HangingModel()
    config = make_config(tmp_path, server={"shutdown_grace_seconds": GRACE})
    gateway = await start_gateway(config, [chat], model=model)
    gateway.outbox.enqueue(chat.name, "stuck", None, "still on its way", kind="reply", key="stuck")
    await chat.say("hello")
    await asyncio.wait_for(model.called.wait(), 5)  # a turn runs, a reply is in the platform's hands
    loop = asyncio.get_running_loop()
    began = loop.time()
    await gateway.stop()
    took = loop.time() - began
    # Before: the grace for the turn, then the grace again for the flush. What is left of that second
    # grace is the stop's own work after the flush, with room for a loaded machine.
    assert GRACE <= took < GRACE * 2
    store = GatewayStore(tmp_path / "state" / STATE_DB)
    try:  # nothing lost: what the flush had no time for goes after the next start
        assert store.outbox.message("stuck:0").status == "pending"
    finally:
        store.close()


async def test_a_stop_while_discord_py_waits_to_reconnect_keeps_to_the_grace(tmp_path, monkeypatch):
    """The Discord gateway went away and discord.py backs off before its next reconnect, which closing
    its client does not cut short: the adapter's stop gets what is left of the grace, not the backoff's
    time (up to 17 minutes in discord.py)."""
    waiting = long_backoff(monkeypatch)
    async with FakeDiscord() as fake:
        config = make_config(tmp_path, server={"shutdown_grace_seconds": 1.0},
                             platforms={"discord": {"allow_all": True}})
        gateway = await start_gateway(config, [adapter_for(fake)])
        await fake.close()
        await asyncio.wait_for(waiting.wait(), 10)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await gateway.stop()
        took = loop.time() - began
    await join_heartbeat_threads()
    assert took < 1.0 + 1.0  # before: the backoff's 30 s; room for a loaded machine


async def test_the_requests_the_temporal_engine_still_sends_at_the_stop_get_what_is_left_of_the_grace(
        tmp_path, monkeypatch):
    """Temporal stops answering just before a child is launched: at the stop the engine tries to start
    its workflow until the stop's grace is spent (at least `CLOSE_FLOOR_SECONDS`), not for its own
    `CLOSE_GRACE_SECONDS` after the grace is over; the next start starts it (the journal keeps its job)."""
    monkeypatch.setattr(temporal_engine, "CLOSE_GRACE_SECONDS", 6.0)  # as long as the default would be, in effect
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "temporal.log")
    await asyncio.to_thread(server.start)
    try:
        chat = RecordingAdapter()
        model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {
            "tasks": [{"goal": "look it up"}]}}]}, {"text": "on it"}]]})
        config = make_config(tmp_path, server={"shutdown_grace_seconds": 0.5},
                             delegation={"gateway_mode": "background"},
                             lifecycle={"engine": "temporal", "temporal": {
                                 "address": server.address, "task_queue": f"grace-{uuid.uuid4().hex[:10]}"}})
        gateway = await start_gateway(config, [chat], model=model)
        await asyncio.to_thread(server.stop)
        await chat.say("look it up")
        await until(lambda: "on it" in chat.texts())
        loop = asyncio.get_running_loop()
        began = loop.time()
        await gateway.stop()
        took = loop.time() - began
    finally:
        await asyncio.to_thread(server.stop)
    # Before: the grace, then the engine's own 6 s. Now the floor, with room for a loaded machine.
    assert took < CLOSE_FLOOR_SECONDS + 1.5
