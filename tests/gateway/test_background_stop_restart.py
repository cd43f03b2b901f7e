"""A background child stopped on purpose (by its parent, ``/stop``, ``/new``) is never run again by a
restart, even with ``lifecycle.on_restart: resume``, when the process stops, or dies, while it winds down."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, SlowToStop, make_config, settled
from lifecycle import PROCESS_EXIT, SubagentState
from tests.gateway.test_dead_letters import killed_now
from tests.polling import until

RESUME = {"display": {"interim_assistant_messages": True}, "lifecycle": {"on_restart": "resume"}}
STOPPED = "stopped by the parent"


def parent(stopping: list[str]):
    """Delegates on "delegate", stops the child named in ``stopping`` on "stop it", says how results ended."""

    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith("[Background delegation results]"):
            return {"text": "results: " + ("stopped" if STOPPED in content else content[-80:])}
        if last["role"] == "user" and "delegate" in content:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
        if last["role"] == "user" and content == "stop it":
            return {"tool_calls": [{"name": "delegate_task",
                                    "arguments": {"action": "stop", "subagent_id": stopping[0]}}]}
        if last["role"] == "tool":
            return {"text": "stopped it" if STOPPED in content or "stop" in content else "on it"}
        return {"text": f"echo {content}"}

    return script


def winding_down(request: ModelRequest) -> dict:
    """A child whose first call ends only once released, asking for a tool: a stop meanwhile ends it there."""
    if request.iteration == 0:
        return {"wait": "leaf", "text": "partial notes", "tool_calls": [{"name": "list_files"}]}
    return {"text": "found it"}


@pytest.mark.parametrize("stop", ["parent", "/stop", "/new"])
@pytest.mark.parametrize("death", ["graceful stop", "SIGKILL"])
async def test_a_child_stopped_on_purpose_and_still_winding_down_is_not_run_again_by_a_restart(
        tmp_path, gateways, stop, death):
    config = make_config(tmp_path, **RESUME)
    chat, stopping = RecordingAdapter(), []
    # The child's model call ignores its stop until released: the child winds down as a tool that tidies up would.
    model = ScriptedModel({"parent": parent(stopping), "leaf": winding_down})
    gateway = await gateways(config, [chat], model=SlowToStop(model))
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("leaf")
    [row] = gateway.store.delegations.running()
    sid = row.tasks[0].subagent_id
    stopping.append(sid)
    if stop == "parent":
        await chat.say("stop it")
        await chat.wait_for(lambda: chat.texts() == ["on it", "stopped it"])
    else:
        await chat.say(stop)
        await chat.wait_for(lambda: "command" in chat.kinds())
    supervisor = gateway.host.lifecycle._supervisor
    record = supervisor.get(sid)
    assert record.interrupt_reason is not None and record.live  # stopped, still winding down

    if death == "SIGKILL":
        await gateway.store.durable()
        restore = killed_now(tmp_path)
        model.release("leaf")
        await gateway.stop(grace=0)
        restore()
    else:
        closing = asyncio.ensure_future(gateway.stop(grace=5))
        await until(lambda: supervisor.engine._closed)  # the close has stopped every child, and waits for them
        model.release("leaf")  # it ends while the close waits for it
        await closing

    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": parent([]), "leaf": lambda r: {"text": "ran again"}})
    gateway2 = await gateways(config, [chat2], model=model2)
    await settled(gateway2)
    assert [r for r in model2.requests if r.role == "leaf"] == []
    found = await gateway2.host.children.lookup([sid])
    assert found[sid].state is SubagentState.INTERRUPTED and found[sid].error != PROCESS_EXIT, found[sid]
    if stop == "parent":  # its delegation is delivered as it ended
        [said] = chat2.texts()
        assert said.startswith("results: stopped") and f"dig: {STOPPED}" in said, said
    else:  # settled by the command
        assert chat2.texts() == []
