"""A turn that ended with its ``send_message`` alone, its end owed (`gateway.owed_ends`) when the process died, runs
again quietly after the start (`docs/gateway.md`): its end marked that what it sent was its answer, so neither what
it sent nor what its new run sends past those, nor that run's answer, goes out again."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.ledger_restarts import stopped
from tests.gateway.test_dead_letters import execute
from tests.gateway.test_quiet_rerun_edges import sending
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.polling import until


async def test_a_turn_that_ended_with_its_message_alone_runs_again_sending_nothing(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [sending("on it", answer="")]}))
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    session = await until(lambda: gateway.sessions.get("chat", "c1", None))
    await until(lambda: not session.running and session.owed)
    await stopped(gateway, tmp_path, crash=True)
    execute(tmp_path, "DROP TRIGGER refuse")
    assert chat.texts() == ["on it"]

    model = ScriptedModel({"parent": [sending("on it", "and one more", answer="done")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert chat.texts() == ["on it"]
    assert gateway2.store.inbox.settled("chat", "ev-1")
