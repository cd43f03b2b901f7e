"""/agents with more children than it lists: those at work are listed, whatever number wait for a slot."""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.agents_command import SHOWN
from gateway.testing import RecordingAdapter, make_config, settled

RESULTS = "[Background delegation results]"


def parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and RESULTS in str(last["content"]):
        return {"text": "NO_REPLY"}
    if last["role"] == "user":  # "first" delegates four tasks, "second" twenty
        name, count = ("first", 4) if "first" in str(last["content"]) else ("second", 20)
        return {"tool_calls": [{"name": "delegate_task", "arguments": {
            "tasks": [{"goal": f"{name} task {i}"} for i in range(count)]}}]}
    return {"text": "on it"}


def leaf(request: ModelRequest) -> dict:
    return {"text": "done"} if request.metadata["goal"] == "first task 0" else {"wait": "go", "text": "done"}


async def test_the_children_at_work_are_listed_before_those_waiting_for_a_slot(tmp_path, gateways):
    # Four run at once: the first delegation's three and the second's first. Listed in the blocks' order,
    # the second's nineteen waiting filled the listing, and the three at work were only counted.
    model = ScriptedModel({"parent": parent, "leaf": leaf})
    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}, "lifecycle": {"max_running": 4},
                "delegation": {"max_concurrent_children": 20}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model)
    await chat.say("first")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await chat.say("second")
    await chat.wait_for(lambda: chat.texts() == ["on it", "on it"])
    async with asyncio.timeout(5):  # the first's three and the second's first have asked their model
        while sum(r.role == "leaf" for r in model.requests) < 5:
            await asyncio.sleep(0.001)

    await chat.say("/agents")
    await chat.wait_for(lambda: chat.texts("command"))
    lines = chat.texts("command")[-1].splitlines()
    running = [line for line in lines if line.startswith("• sa-") and " — running, " in line]
    assert [line.split(" — ")[1] for line in running] == ["second task 0", *(f"first task {i}" for i in (1, 2, 3))]
    assert sum(line.startswith("• sa-") for line in lines) == SHOWN
    assert "… and 11 more: 11 pending" in lines and "… and 1 more: 1 succeeded" in lines
    model.release("go")
    await settled(gateway)
