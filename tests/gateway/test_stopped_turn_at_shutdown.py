"""A turn that something other than the shutdown ended — a `/stop`, a message that interrupted it,
its reply being journaled — and that the shutdown finds still winding down is not run again after
the restart: its messages are settled. So what it added to the transcript is stored, as without the
shutdown; only a turn the shutdown itself cut short stores nothing, and runs again, whole."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, SlowToStop, make_config, settled
from tests.polling import until


def users(tmp_path) -> list[str]:
    """What the chat said, as the stored transcript holds it."""
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        rows = conn.execute("SELECT message FROM gateway_transcript WHERE key='chat|c1|' ORDER BY seq").fetchall()
    finally:
        conn.close()
    return [str(m["content"]) for m in (json.loads(row) for (row,) in rows) if m["role"] == "user"]


def gated(request: ModelRequest) -> dict:
    """``one`` waits at the gate ``one``; anything else is answered at once."""
    said = str(request.messages[-1]["content"])
    return {"wait": "one", "text": "answer one"} if said == "one" else {"text": f"answer {said}"}


async def winding_down_at_the_stop(gateway, model: ScriptedModel) -> None:
    """Stop ``gateway`` while the turn of ``one`` (ended already) still winds down, until the stop
    has marked it as the shutdown's; then let it end."""
    session = next(iter(gateway.sessions))
    stopping = asyncio.ensure_future(gateway.stop(grace=0))
    await until(lambda: session.running is not None and session.running.shutdown)
    model.release("one")
    await stopping


async def test_a_turn_stopped_by_stop_and_still_winding_down_at_the_shutdown_keeps_its_transcript(
        tmp_path, gateways):
    config, chat, model = make_config(tmp_path), RecordingAdapter(), ScriptedModel({"*": gated})
    gateway = await gateways(config, [chat], model=SlowToStop(model))
    await chat.say("zero")
    await chat.wait_for(lambda: chat.texts("reply") == ["answer zero"])
    await chat.say("one")
    await model.reached("one")
    await chat.say("/stop")  # settles "one": no restart runs it again
    await chat.wait_for(lambda: "command" in chat.kinds())
    await winding_down_at_the_stop(gateway, model)
    assert users(tmp_path) == ["zero", "one"]  # before, "one" was gone from the history

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"*": gated}))
    await settled(gateway2)
    assert chat2.texts() == [] and users(tmp_path) == ["zero", "one"]


async def test_a_turn_a_newer_message_interrupted_and_still_winding_down_at_the_shutdown_keeps_its_transcript(
        tmp_path, gateways):
    config, chat, model = make_config(tmp_path), RecordingAdapter(), ScriptedModel({"*": gated})
    gateway = await gateways(config, [chat], model=SlowToStop(model))  # busy_input_mode: interrupt, the default
    await chat.say("zero")
    await chat.wait_for(lambda: chat.texts("reply") == ["answer zero"])
    await chat.say("one")
    await model.reached("one")
    await chat.say("two")  # interrupts "one", settled; "two" waits behind it, and the stop comes first
    session = next(iter(gateway.sessions))
    await until(lambda: session.running is not None and session.running.suppressed)
    await winding_down_at_the_stop(gateway, model)
    assert users(tmp_path) == ["zero", "one"]

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"*": gated}))
    await chat2.wait_for(lambda: chat2.texts("reply") == ["answer two"])  # "two" never began: it runs now
    await settled(gateway2)
    assert users(tmp_path) == ["zero", "one", "two"]


class HeldSplit(RecordingAdapter):
    """Splitting a reply holding ``held`` (in the outbox's worker thread) waits until ``go`` is set."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held = held
        self.splitting, self.go = threading.Event(), threading.Event()

    def measure(self, text: str) -> int:
        if self.held in text:
            self.splitting.set()
            self.go.wait(10)
        return len(text)


async def test_a_turn_whose_reply_is_journaled_as_the_shutdown_interrupts_it_keeps_its_transcript(
        tmp_path, gateways):
    # The stop marks every running turn as cut short (`interrupt_all`) and cancels the workers a loop
    # iteration later; a reply whose split ends in between is journaled, and the turn settles its
    # message: it must store what it added too.
    config, chat, model = make_config(tmp_path), HeldSplit("answer one"), ScriptedModel({"*": gated})
    model.release("one")
    gateway = await gateways(config, [chat], model=model)
    await chat.say("zero")
    await chat.wait_for(lambda: chat.texts("reply") == ["answer zero"])
    await chat.say("one")
    await until(chat.splitting.is_set)
    gateway.sessions.interrupt_all("the gateway is shutting down")  # the stop's first step, as its reply is split
    chat.go.set()
    await chat.wait_for(lambda: chat.texts("reply") == ["answer zero", "answer one"])
    await settled(gateway)
    await gateway.stop(grace=0)
    assert users(tmp_path) == ["zero", "one"]

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"*": gated}))
    await settled(gateway2)
    assert chat2.texts() == [] and users(tmp_path) == ["zero", "one"]
