"""``/stop``'s answer speaks of one stopped subagent in the singular, of several in the plural."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_ledger import BACKGROUND


def parent(goals: list[str]):
    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in goals]}}]}
        return {"text": "on it"}

    return script


@pytest.mark.parametrize(("goals", "answer"), [
    (["alpha"], "Stopped 1 subagent. The subagent's partial result is listed by /agents."),  # was "Their … results"
    (["alpha", "beta"], "Stopped 2 subagents. Their partial results are listed by /agents."),
])
async def test_stop_names_what_it_stopped_in_the_right_number(tmp_path, gateways, goals, answer):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(goals), "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    for _ in goals:
        await model.reached("forever")
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts("command") == [answer]
