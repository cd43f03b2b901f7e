"""A message steered into a turn that then ran out of iterations, its tool result carrying it to no model
call: it is answered, as a turn of its own, not settled unanswered with the turn that swallowed it."""

from __future__ import annotations

from agent._session import STEER_NOTE
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


def listing_then_answering(request):
    last = request.messages[-1]
    if last["role"] == "user" and last["content"] == "start":
        return {"wait": "first", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    return {"text": f"answer to {last['content']}"}


async def test_a_message_steered_into_a_turn_that_runs_out_of_iterations_is_answered(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": listing_then_answering})
    config = make_config(tmp_path, display={"busy_input_mode": "steer"}, agent={"max_iterations": 1})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start", event_id="ev-start")
    await model.reached("first")
    await chat.say("use metric units", event_id="ev-steer")  # put after the tool's result; no model call follows
    model.release("first")
    await chat.wait_for(lambda: any(text == "answer to use metric units" for text in chat.texts()))
    await settled(gateway)
    assert chat.texts()[-1] == "answer to use metric units"
    assert not any(STEER_NOTE in str(m.get("content")) for m in model.requests[-1].messages)  # read once, as itself
    assert gateway.store.inbox.settled("chat", "ev-start") and gateway.store.inbox.settled("chat", "ev-steer")
