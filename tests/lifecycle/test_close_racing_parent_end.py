"""docs/lifecycle.md "Durability": a child asked to stop before the process did (its parent's end among those
stops: "The parent") ends with that stop's reason, not the close's. A subagent whose end was reported in the
same turn of the event loop as the close began left its own children to the close: they ended "interrupted by
process exit", as children lost to the process are, not as children of a subagent that had ended."""

from __future__ import annotations

import asyncio

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentLifecycle
from lifecycle import SubagentState as S
from lifecycle._supervisor import PARENT_ENDED
from lifecycle.settings import DelegationSettings, LifecycleSettings
from tests.plugin_modules import plugin_module

PLUGIN = """
from lifecycle import SubagentLaunchRequest

launched = []


def register(ctx):
    service = ctx.subagent_lifecycle

    def research(args, tool_ctx):
        launched.append(service.launch(SubagentLaunchRequest(goal=args["goal"])))
        return "launched"

    ctx.register_tool("research", "Research in a subagent.", {"type": "object"}, research)
"""


def children(request):
    goal = request.metadata["goal"]
    if goal == "outer" and request.iteration == 0:
        return {"wait": "research", "tool_calls": [{"name": "research", "arguments": {"goal": "inner"}}]}
    if goal == "outer":
        return {"wait": "outer", "text": "outer done"}
    return {"hang": True}  # an inner child, and another chat's


async def close_as_the_parent_ends(tmp_path, monkeypatch, *, queued):
    tools, hooks = ToolRegistry(), HookRegistry()
    host = ChildHost(tools=tools, hooks=hooks, delegation=DelegationSettings(max_spawn_depth=2))
    service = AsyncSubagentLifecycle(host, MemoryJournal(), settings=LifecycleSettings(max_running=2))
    await service.start()
    plugins = PluginHost(tools, hooks)
    stops = {}
    try:
        plugin = plugin_module(tmp_path, monkeypatch, "close_race_research", PLUGIN)
        await plugins.load(["close_race_research"], lifecycle=SubagentLifecycle(service))
        assert plugins.failures == []
        hooks.register("subagent_stop", lambda **e: stops.__setitem__(e["child_session_id"], e["child_status"]))
        model = ScriptedModel({"leaf": children})
        parent = AgentSession(model=model, tools=tools.resolve(), session_id="top")
        other = AgentSession(model=model, tools=tools.resolve(), session_id="other")
        with inside_turn(parent):
            outer = await service.launch(SubagentLaunchRequest(goal="outer"))
            await model.reached("research")
            if queued:  # another chat's two children: one runs, and the slot the outer child frees goes to the other
                with inside_turn(other):
                    for _ in range(2):
                        await service.launch(SubagentLaunchRequest(goal="another chat's"))
            assert plugin.launched == []
            model.release("research")
            while not plugin.launched:
                await asyncio.sleep(0.01)
            (inner,) = plugin.launched
            await model.reached("outer")
            view = service.host_view()
            (snap,) = (await view.lookup([inner.subagent_id])).values()
            assert snap.state is (S.PENDING if queued else S.RUNNING)
            # The outer child's end is reported in the step its gate wakes it for, queued before the close's
            # first step: the close begins after that end, before anything else runs.
            model.release("outer")
            await service.close()
            assert (await service.status(outer)).state is S.SUCCEEDED
        # Its handle reads only in the outer child's session, which has no turn now: the result the service kept.
        return service._supervisor.get(inner.subagent_id), stops.get(inner.subagent_id)
    finally:
        plugins.close()
        await service.close()


async def test_a_running_child_of_a_subagent_that_ended_as_the_close_began_ends_as_its_parents(
        tmp_path, monkeypatch):
    result, stop = await close_as_the_parent_ends(tmp_path, monkeypatch, queued=False)
    assert (result.state, result.error_message) == (S.INTERRUPTED, PARENT_ENDED)
    assert stop == "interrupted"


async def test_a_queued_child_of_a_subagent_that_ended_as_the_close_began_ends_as_its_parents(
        tmp_path, monkeypatch):
    result, stop = await close_as_the_parent_ends(tmp_path, monkeypatch, queued=True)
    assert (result.state, result.error_message) == (S.INTERRUPTED, PARENT_ENDED)
    assert stop == "interrupted"
