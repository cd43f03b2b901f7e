"""`TurnRunner`'s memory of turns that may have run before (replays): kept only until each
turn begins or ends without beginning, never for the process's life."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import break_new_sessions


@pytest.mark.parametrize("command", ["/stop", "/new"])
async def test_a_replayed_turn_dropped_while_queued_is_not_remembered_as_a_replay(tmp_path, gateways, command):
    chat, config = RecordingAdapter(), make_config(tmp_path, display={"busy_input_mode": "queue"})
    working = {"parent": [[{"wait": "working", "text": "never sent"}]]}
    model = ScriptedModel(working)
    gateway = await gateways(config, [chat], model=model)
    await chat.say("first")
    await chat.say("second")  # queued behind the first
    await model.reached("working")
    await gateway.stop(grace=0)  # both run again after the restart

    chat2, model2 = RecordingAdapter(), ScriptedModel(working)
    gateway2 = await gateways(config, [chat2], model=model2)
    await model2.reached("working")  # the first began again; the second waits behind it
    assert len(gateway2.runner._replays) == 1
    await chat2.say(command)  # drops the second before it begins
    await chat2.wait_for(lambda: chat2.texts())
    await settled(gateway2)
    assert gateway2.runner._replays == set()


async def test_a_replayed_event_set_aside_as_a_dead_letter_is_not_remembered_as_a_replay(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=True)
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "never"}]]}, clock=clock)
    break_new_sessions(gateway)
    await chat.say("hello", event_id="ev-poison")  # tried again twice (each a possible replay), then set aside
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert len(gateway.store.dead_letters.all()) == 1
    assert gateway.runner._replays == set()
