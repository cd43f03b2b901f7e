"""A graceful stop takes at most ``server.shutdown_grace_seconds`` in all: the turns still running
and the outbox's flush share it (`Gateway.stop`), so a supervisor's stop timeout set to the grace
(`docker stop`, systemd) never has to kill the gateway."""

from __future__ import annotations

import asyncio

from agent import ModelRequest, ModelResponse
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, start_gateway
from platforms.base import Outbound, Sent

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
