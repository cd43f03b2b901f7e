"""Turns whose first run journaled no answer run again as any other after a death, and answer: one the death cut
short after it sent something with ``send_message``, one it found waiting for the chat's answer to a question. (A
turn that ended with its sends alone is marked so at its end, and runs again quietly: `test_owed_end_sends_alone`.)"""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.ledger_restarts import stopped
from tests.gateway.test_quiet_rerun_edges import sending
from tests.polling import until

ASKING = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?"}}]}


async def test_a_turn_cut_short_after_its_message_runs_again_and_answers(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    said = {"tool_calls": [{"name": "send_message", "arguments": {"text": "on it"}}]}
    first = ScriptedModel({"parent": [[said, {"wait": "never", "text": "lost"}]]})
    gateway = await gateways(config, [chat], model=first)
    await chat.say("hello", event_id="ev-1")
    await first.reached("never")
    await stopped(gateway, tmp_path, crash=True)
    assert chat.texts() == ["on it"]

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [sending("on it", answer="done")]}))
    await chat.wait_for(lambda: "done" in chat.texts())
    await settled(gateway2)
    assert chat.texts() == ["on it", "done"]


async def test_a_turn_that_died_waiting_for_its_question_runs_again_and_answers(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    script = [sending("on it", answer="")[0], ASKING, {"text": "deploying"}]
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [script]}))
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: len(chat.texts()) == 2)  # "on it", then the question: its message unmarked
    await stopped(gateway, tmp_path, crash=True)
    assert "Which environment?" in chat.texts()[1]

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [script]}))
    await until(lambda: (s := gateway2.sessions.get("chat", "c1", None)) is not None and s.running is not None
                and s.running.question is not None)
    await chat.say("staging", event_id="ev-2")
    await chat.wait_for(lambda: "deploying" in chat.texts())
    await settled(gateway2)
    # Taken for a turn that ended with its message alone, it ran quiet: told the chat cannot be asked, its answer
    # never sent.
    assert chat.texts()[-1] == "deploying" and chat.texts().count("on it") == 1
