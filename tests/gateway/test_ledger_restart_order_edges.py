"""Edges of a completion turn running again first in its chat after a restart (`Ledger.resume_first`): in every
busy-input mode the messages that waited behind it are answered after its results; so are those that waited
behind one that had asked the chat a question (idle, not marked begun) when the process died or stopped."""

import pytest

from agent import ModelRequest
from gateway.ledger import COMPLETION_PREFIX
from gateway.testing import make_config
from tests.gateway.ledger_restarts import RESULTS, delegating, started_again, stopped

QUESTION = "Which environment?"


def asking(request: ModelRequest) -> dict:
    """Delegates on "delegate"; its completion turn waits (at ``completion``), then asks the chat."""
    last = request.messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith(RESULTS):
        return {"wait": "completion", "tool_calls": [{"name": "clarify", "arguments": {"question": QUESTION}}]}
    if last["role"] == "user" and "delegate" in str(last["content"]):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    return {"text": "on it"}


async def restarted(tmp_path, gateways, *, crash: bool, mode: str = "queue", asks: bool = False):
    """Restarted after the process died (``crash``) or stopped while a completion turn ran (or, ``asks``, waited
    for the answer to its question), "second" and "third" waiting behind it: its chat, the delegation's row, and
    what the model had read when it was asked each message."""
    config = make_config(tmp_path, display={"busy_input_mode": mode, "interim_assistant_messages": True})
    gateway, chat, model = await delegating(gateways, config, asking if asks else None)
    await chat.say("second")
    await chat.say("third")
    if asks:  # sent before the question was asked, "second" and "third" answer nothing: they wait behind the turn
        model.release("completion")
        await chat.wait_for(lambda: any(QUESTION in text for text in chat.texts()))
    await stopped(gateway, tmp_path, crash=crash)

    gateway, chat, read = await started_again(gateways, config, 3)
    [row] = gateway.store.delegations.recent(1)
    return chat, row, read


@pytest.mark.parametrize("mode", ["interrupt", "steer"])
async def test_messages_behind_a_completion_turn_are_answered_after_it_in_every_busy_mode(tmp_path, gateways, mode):
    # A completion turn is neither interrupted nor steered: the messages queue behind it whatever the mode.
    chat, row, read = await restarted(tmp_path, gateways, crash=True, mode=mode)
    assert chat.texts() == ["results", "re: second", "re: third"]
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])
    assert row.status == "delivered"


@pytest.mark.parametrize("crash", [True, False])
async def test_messages_behind_a_completion_turn_waiting_for_an_answer_are_answered_after_it(
        tmp_path, gateways, crash):
    chat, row, read = await restarted(tmp_path, gateways, crash=crash, asks=True)
    assert chat.texts() == ["results", "re: second", "re: third"]
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])
    assert row.status == "delivered"
