"""The console's tree keeps a shown turn's finished subagents, however many of the chat's have ended since.

The lifecycle remembers a session's last 10 finished children (for `/agents`); the console listed only those, so
in a busy turn (55 children) the first to end left the tree while the turn was still shown: the one an operator
had just stopped vanished, its INTERRUPTED with it, and so did an orchestrator's earlier children."""

from __future__ import annotations

import asyncio
from typing import Any

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.console.routes import STOP_REASON
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import served
from tests.gateway.test_console import post, state

GOALS = [f"item {i}" for i in range(14)]
BUSY = {"delegation": {"gateway_mode": "background", "max_concurrent_children": 20, "max_spawn_depth": 2},
        "lifecycle": {"max_running": 20}}


def gated(request: ModelRequest) -> dict[str, Any]:
    return {"wait": request.metadata["goal"], "text": "found"}


async def until(read, done) -> Any:
    """What ``read`` gives once ``done`` holds of it, or what it gave last after 5 s (for the assertion to show)."""
    try:
        async with asyncio.timeout(5):
            while not done(seen := await read()):
                await asyncio.sleep(0.01)
    except TimeoutError:
        pass
    return seen


async def test_a_busy_turn_keeps_every_finished_subagent_listed_the_one_stopped_first_included(
        tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    tasks = {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}
    model = ScriptedModel({"parent": [[tasks, {"text": "on it"}], [{"text": "results are in"}]], "leaf": gated})
    gateway = await gateways(make_config(tmp_path, **BUSY), [chat], model=model)
    await chat.say("compare", chat="c1")
    for goal in GOALS:
        await model.reached(goal)
    async with served(gateway) as server:
        [work] = (await state(server.url))["work"]
        ids = {c["goal"]: c["id"] for c in work["children"]}
        assert await post(server.url, f"/console/api/children/{ids['item 0']}/stop") == (200, {"ok": True})
        for goal in GOALS[1:-1]:
            model.release(goal)
        finished = len(GOALS) - 1
        seen = await until(lambda: state(server.url),
                           lambda s: sum(not c["live"] for c in s["work"][0]["children"]) == finished)
        [work] = seen["work"]
        assert [(c["goal"], c["state"], c["live"]) for c in work["children"]] == [
            ("item 0", "INTERRUPTED", False), *((g, "SUCCEEDED", False) for g in GOALS[1:-1]),
            (GOALS[-1], "RUNNING", True)]
        assert work["children"][0]["error"] == STOP_REASON
        model.release(GOALS[-1])
        await settled(gateway)
        assert (await state(server.url))["work"] == []


async def test_an_orchestrator_keeps_every_finished_child_of_its_own_listed(tmp_path, gateways) -> None:
    chat = RecordingAdapter()

    def orchestrator(request: ModelRequest) -> dict[str, Any]:
        if request.messages[-1]["role"] == "tool":
            return {"text": "planned"}
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}

    plan = {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "plan", "role": "orchestrator"}}]}
    model = ScriptedModel({"parent": [[plan, {"text": "on it"}], [{"text": "results are in"}]],
                           "orchestrator": orchestrator, "leaf": gated})
    gateway = await gateways(make_config(tmp_path, **BUSY), [chat], model=model)
    await chat.say("plan it", chat="c1")
    for goal in GOALS:
        await model.reached(goal)
    for goal in GOALS[:-1]:
        model.release(goal)
    async with served(gateway) as server:
        def leaves(s: dict[str, Any]) -> list[dict[str, Any]]:
            return [leaf for w in s["work"] for c in w["children"] for leaf in c["children"]]

        finished = len(GOALS) - 1
        seen = await until(lambda: state(server.url), lambda s: sum(not c["live"] for c in leaves(s)) == finished)
        assert [(c["goal"], c["live"]) for c in leaves(seen)] == [
            *((g, False) for g in GOALS[:-1]), (GOALS[-1], True)]
        model.release(GOALS[-1])
        await settled(gateway)
