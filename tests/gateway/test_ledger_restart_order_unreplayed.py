"""A completion turn (background results) running when the process died or stopped, in a chat none of whose
messages is replayed, runs again before the messages its user sent meanwhile: a platform hands them over as it
starts (Telegram's updates kept while the gateway was down), and their turns read the results first."""

import asyncio

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.ledger import COMPLETION_PREFIX
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.ledger_restarts import RESULTS, delegating, parent, stopped
from tests.gateway.test_turn_end_full_disk import until


class Backlog(RecordingAdapter):
    """Hands over ``said`` as it starts, while the gateway's start goes on: sent while the gateway was down."""

    def __init__(self, said: str) -> None:
        super().__init__()
        self._said = said
        self.handed: asyncio.Future[object] | None = None

    async def start(self, sink, commands=()) -> None:
        await super().start(sink, commands)
        self.handed = asyncio.ensure_future(self.say(self._said))


@pytest.mark.parametrize("crash", [True, False])
async def test_a_completion_turn_runs_again_before_a_message_sent_while_the_gateway_was_down(
        tmp_path, gateways, crash):
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True})
    gateway, _, _ = await delegating(gateways, config)  # its completion turn runs; no message waits
    await stopped(gateway, tmp_path, crash=crash)

    chat = Backlog("second")
    read: dict[str, list[str]] = {}
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent(False, read)}))
    await chat.wait_for(lambda: len(chat.messages) >= 2)
    await settled(gateway)
    assert chat.texts() == ["results", "re: second"]
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])


def two_delegations(request: ModelRequest) -> dict:
    """Delegates on each "delegate" message; its completion turns wait at ``completion``."""
    last = request.messages[-1]
    said = str(last.get("content"))
    if last["role"] == "user" and said.startswith(RESULTS):
        return {"wait": "completion", "text": "results"}
    if last["role"] == "user" and "delegate" in said:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": f"dig {said}"}}]}
    return {"text": "on it"}


async def test_completion_turns_running_and_queued_run_again_before_a_message_sent_while_the_gateway_was_down(
        tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": two_delegations, "leaf": lambda request: {"wait": "leaf", "text": "found it"}})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts().count("on it") == 1)
    await chat.say("delegate more")
    await chat.wait_for(lambda: chat.texts().count("on it") == 2)
    model.release("leaf")
    await model.reached("completion")  # the first runs; the second is queued behind it, no message is
    session = gateway.sessions.find("chat", "c1", None)
    await until(lambda: [item.delegation_id is not None for item in session.queue] == [True])
    await stopped(gateway, tmp_path, crash=True)

    chat = Backlog("third")
    read: dict[str, list[str]] = {}
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent(False, read)}))
    await chat.wait_for(lambda: len(chat.messages) >= 3)
    await settled(gateway)
    assert chat.texts() == ["results", "results", "re: third"]
    assert sum(text.startswith(COMPLETION_PREFIX) for text in read["third"]) == 2
