"""A webhook caller whose request answers the running turn's question is told the asking turn's id
(`docs/gateway.md`: its ``turn_id`` is the asking turn's), also when the state database refuses to settle
the answer's event (a full disk) and it is settled later: told its own request's id, the caller read a turn
that never ran, empty, then unknown once the event was settled into the asking turn."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import asking_parent
from tests.gateway.test_command_answer_full_disk import no_room, room


async def test_an_answer_whose_settling_is_refused_names_the_asking_turn(tmp_path, gateways):
    chat, clock = RecordingAdapter("webhook"), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock,
                             model=ScriptedModel({"parent": asking_parent}))
    asked = await chat.say("please deploy the app", event_id="ev-ask")
    await chat.wait_for(lambda: len(chat.texts()) == 1)
    db = gateway.store.db
    no_room(db, "NEW.event_id = 'ev-answer' AND NEW.status = 'done'", "gateway_inbox", event="UPDATE")
    answer = await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: "deploying to: production" in chat.texts())
    assert answer.turn_id == asked.turn_id
    again = await chat.say("2", event_id="ev-answer")  # sent again (a 500 for a commit the disk refused)
    assert again.duplicate and again.turn_id == asked.turn_id
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)
    room(db)
    clock.advance(FIRST_PAUSE_SECONDS)
    await settled(gateway)
    assert gateway.store.inbox.settled("webhook", "ev-answer")
    assert gateway.store.inbox.event_of_turn("webhook", answer.turn_id).event_id == "ev-ask"
