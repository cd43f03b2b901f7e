"""A message sent while a turn runs, after NTP stepped the gateway's fast wall clock back: it still
interrupts that turn (`Gateway._began_at`), not taken for one written before the turn began."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_busy_input import answering


async def test_a_message_the_platform_dates_after_the_turn_began_stops_it_once_a_fast_clock_is_set_right(
        tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    clock.jump(3600.0)  # the gateway's clock an hour ahead of the platform's: the turn is stamped an hour late
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    await chat.say("start", sent_at=clock.time() - 3600.0)
    await model.reached("first")
    clock.advance(5)
    clock.jump(-3600.0)  # NTP sets it right
    await chat.say("never mind", sent_at=clock.time())  # dated by the platform an hour before the turn's stamp
    await chat.wait_for(lambda: "answer to never mind" in chat.texts())
    model.release("first")
    await settled(gateway)
    replies = [text for text in chat.texts() if not text.startswith("⏱")]  # the hour the fast clock made up
    assert replies == ["answer to never mind"]


async def test_after_a_suspend_a_message_sent_before_the_turn_began_still_waits_for_it(tmp_path, gateways):
    # The machine slept while the turn ran: the wall clock ran ahead, which moves the turn's start nowhere.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    await chat.say("start", sent_at=clock.time() - 60)
    await model.reached("first")
    clock.jump(8 * 3600.0)
    await chat.say("and check the logs", sent_at=clock.time() - 8 * 3600.0 - 59)  # caught up after the restart
    model.release("first")
    await chat.wait_for(lambda: "answer to and check the logs" in chat.texts())
    await settled(gateway)
    replies = [text for text in chat.texts() if not text.startswith("⏱")]  # late notes: the night it slept
    assert replies == ["answer to start", "answer to and check the logs"]
