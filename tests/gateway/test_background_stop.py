"""A ``/stop`` or ``/new`` that ends the turn delivering background results says they will not come."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


def answering_slowly(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith("[Background delegation results]"):
        return {"wait": "answering", "text": "here are the results"}
    if last["role"] == "user" and last["content"] == "go":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    return {"text": "on it"}


@pytest.mark.parametrize(("command", "said"), [
    ("/stop", "Stopped the running turn. The results of 1 finished background task will not be delivered"),
    ("/new", "Started a new session. The results of 1 finished background task will not be delivered."),
])
async def test_a_stop_of_the_turn_answering_results_says_they_will_not_be_delivered(tmp_path, gateways, command,
                                                                                   said):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": answering_slowly, "leaf": lambda request: {"text": "found it"}})
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat], model=model)
    await chat.say("go")
    await model.reached("answering")  # the child's results are being answered
    await chat.say(command)
    await chat.wait_for(lambda: "command" in chat.kinds())
    model.release("answering")
    await settled(gateway)
    assert chat.texts("completion") == []
    (confirmation,) = chat.texts("command")
    assert confirmation.startswith(said), confirmation
    await chat.say("/stop")  # said once: a later stop has no such results left to drop
    await chat.wait_for(lambda: len(chat.texts("command")) == 2)
    assert chat.texts("command")[1] == "Nothing was running."
