"""With ``busy_input_mode: queue``, messages queued behind a running completion turn (background results)
when the process dies or stops are answered after those results after the restart too, the model reading
the results first; one given up on is sent as it is, first, and each message is answered once."""

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.ledger import COMPLETION_PREFIX
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import killed_now

RESULTS = "[Background delegation results]"


def parent(stuck: bool, read: dict[str, list[str]] | None = None):
    """``read``: what the model had read when it was asked each message, by the message."""
    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if read is not None:
            read[content] = [str(m.get("content")) for m in request.messages[:-1]]
        if last["role"] == "user" and content.startswith(RESULTS):
            return {"wait": "completion", "text": "results"} if stuck else {"text": "results"}
        if last["role"] == "user" and "delegate" in content:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"text": f"re: {content}"}
    return script


async def restarted_with_two_waiting(tmp_path, gateways, *, crash: bool, **config):
    """A gateway restarted after it died (``crash``) or stopped while its completion turn ran, with ``second``
    and ``third`` queued behind it; its chat, and what its model read when it was asked each message."""
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True},
                         **config)
    chat, model = RecordingAdapter(), ScriptedModel({"parent": parent(True), "leaf": [[{"text": "found it"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("completion")
    await chat.say("second")
    await chat.say("third")
    await gateway.store.durable()
    restore = killed_now(tmp_path) if crash else (lambda: None)
    await gateway.stop(grace=0)
    restore()
    chat = RecordingAdapter()
    read: dict[str, list[str]] = {}
    model = ScriptedModel({"parent": parent(False, read), "leaf": [[{"text": "found it"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.wait_for(lambda: len(chat.messages) >= 3)
    await settled(gateway)
    return gateway, chat, read


@pytest.mark.parametrize("crash", [True, False])
async def test_messages_queued_behind_a_completion_turn_are_answered_after_it_across_a_restart(
        tmp_path, gateways, crash):
    gateway, chat, read = await restarted_with_two_waiting(tmp_path, gateways, crash=crash)
    assert chat.texts() == ["results", "re: second", "re: third"]
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])  # the results, then "second"
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"


async def test_a_completion_turn_given_up_on_at_the_restart_is_sent_as_it_is_before_the_messages(
        tmp_path, gateways):
    gateway, chat, read = await restarted_with_two_waiting(tmp_path, gateways, crash=True, inbox={"max_attempts": 1})
    texts = chat.texts()
    assert texts[0].startswith(UNDELIVERABLE) and "found it" in texts[0]
    assert texts[1:] == ["re: second", "re: third"]
    assert not any(asked.startswith(RESULTS) for asked in read)  # sent as they are: not handed to the model
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"
