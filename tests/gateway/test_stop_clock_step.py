"""The web chat, the terminal and webhooks date no message: which was sent first is the order the inbox received
them in. NTP stepping the wall clock back (it ran fast) must not turn that order round: a `/stop` or a follow-up
sent after the step still stops the running turn (`Inbox.arrival`: the inbox's order, not its receipts' dates)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.store.conftest import event
from tests.gateway.test_busy_input import answering


async def test_a_stop_sent_after_the_clock_was_stepped_back_stops_the_running_turn(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    await chat.say("start")
    await model.reached("first")
    clock.advance(5)
    clock.jump(-3600.0)  # NTP sets a clock that ran an hour fast right
    await chat.say("/stop")
    await chat.wait_for(lambda: chat.texts())
    model.release("first")
    await settled(gateway)
    assert chat.texts() == ["Stopped the running turn."]


async def test_a_message_sent_after_the_clock_was_stepped_back_stops_the_running_turn(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    await chat.say("start")
    await model.reached("first")
    clock.advance(5)
    clock.jump(-3600.0)
    await chat.say("never mind")
    await chat.wait_for(lambda: "answer to never mind" in chat.texts())
    model.release("first")
    await settled(gateway)
    assert chat.texts() == ["answer to never mind"]


def test_receipts_are_dated_by_the_clock_and_keep_their_order_across_a_restart_with_it_stepped_back(tmp_path):
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    store.inbox.accept(event("before", platform="web"), "t-1")
    store.close()
    clock.jump(-3600.0)  # set right while the gateway was down
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        store.inbox.accept(event("after", platform="web"), "t-2")
        assert store.inbox.received_at("web", "after") == clock.time()  # as the web chat's history shows it
        first, then = (store.inbox.arrival("web", e) for e in ("before", "after"))
        assert first is not None and then is not None and first < then
    finally:
        store.close()
