"""A completion turn (background results handed to the model) that waits for the chat's answer to its
question is idle, as a message's turn is then: a gateway dying meanwhile (another chat's poison message,
an OOM, a reboot) is not charged to it as a failed attempt; from the answer on it is again."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_ledger import BACKGROUND

RESULTS = "[Background delegation results]"
QUESTION = "Which environment?"


def asking_on_results(request: ModelRequest) -> dict:
    """Delegates on "delegate"; its completion turn asks the chat, then waits (at ``answered``) for good."""
    last = request.messages[-1]
    users = [str(m.get("content")) for m in request.messages if m["role"] == "user"]
    if request.role == "leaf":
        return {"text": "found the logs"}
    if last["role"] == "user" and str(last["content"]).startswith(RESULTS):
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": QUESTION, "choices": CHOICES}}]}
    if last["role"] == "tool" and users[-1].startswith(RESULTS):
        return {"wait": "answered", "text": f"deploying to: {last['content']}"}
    if last["role"] == "user" and "delegate" in str(last["content"]):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "read the logs"}}]}
    if last["role"] == "tool":
        return {"text": "on it"}
    return {"text": f"echo {last['content']}"}


def answering(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith(RESULTS):
        return {"text": "the logs are read"}
    return {"text": f"echo {last['content']}"}


@pytest.mark.parametrize("death", ["while the question waits", "after the answer"])
async def test_a_completion_turn_waiting_for_an_answer_is_not_charged_with_a_death_then(tmp_path, gateways, death):
    config = make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": asking_on_results, "leaf": asking_on_results})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please delegate")
    await chat.wait_for(lambda: any(QUESTION in text for text in chat.texts()))
    [row] = gateway.store.delegations.running()
    await gateway.store.durable()
    assert gateway.store.delegations.deliveries_begun() == set()  # idle: its mark is lifted
    if death == "after the answer":
        await chat.say("2", event_id="ev-answer")
        await model.reached("answered")
        await gateway.store.durable()
        assert gateway.store.delegations.deliveries_begun() == {row.delegation_id}  # marked again
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": answering}), clock=clock)
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [said] = chat2.texts()
    if death == "while the question waits":
        assert said == "the logs are read"  # uncharged: handed to the model again
    else:
        assert said.startswith(UNDELIVERABLE)  # its one attempt was charged: sent as they are
    assert gateway2.store.delegations.running() == []
