"""A completion turn (background results) running in a chat when its gateway stops or dies, and the next process,
for the ledger's restart-order tests: the parent model's script (`parent`), the chat asking to delegate
(`delegating`), the process stopped or killed (`stopped`), and started again (`started_again`)."""

from __future__ import annotations

from typing import Any

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import RecordingAdapter, settled
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


async def delegating(gateways, config, script=None) -> tuple[Gateway, RecordingAdapter, ScriptedModel]:
    """A gateway on ``config`` whose chat asked it to delegate; returned once the completion turn with the child's
    results runs, held at ``completion`` (``script``: the parent's, `parent` stuck unless given)."""
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(True) if script is None else script, "leaf": [[{"text": "found it"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("completion")
    return gateway, chat, model


async def stopped(gateway: Gateway, tmp_path, *, crash: bool) -> None:
    """``gateway`` stopped once what it took in is on disk; ``crash``: leaving what a SIGKILL then would
    (`killed_now`)."""
    await gateway.store.durable()
    restore = killed_now(tmp_path) if crash else (lambda: None)
    await gateway.stop(grace=0)
    restore()


async def started_again(gateways, config, answers: int,
                        **script: Any) -> tuple[Gateway, RecordingAdapter, dict[str, list[str]]]:
    """Started once more on ``config``, the model answering as `parent` unstuck (``script``: its other roles');
    returned settled once its chat has ``answers`` messages: its chat, and what its model had read when it was
    asked each message."""
    chat = RecordingAdapter()
    read: dict[str, list[str]] = {}
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent(False, read), **script}))
    await chat.wait_for(lambda: len(chat.messages) >= answers)
    await settled(gateway)
    return gateway, chat, read
