"""docs/lifecycle.md "The parent": a child that launched children of its own through a plugin's tool it inherited
ends them with it. Their handles work only in its session, which has no later turn, and the host reaches a
session's children through the live ones: left running, they spent for no one, out of reach of /stop and /new."""

from __future__ import annotations

import asyncio

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentLifecycle
from lifecycle import SubagentState as S
from lifecycle._supervisor import PARENT_ENDED
from lifecycle.settings import DelegationSettings
from tests.plugin_modules import plugin_module

PLUGIN = """
from lifecycle import SubagentLaunchRequest

launched = []


def register(ctx):
    service = ctx.subagent_lifecycle

    def research(args, tool_ctx):
        handle = service.launch(SubagentLaunchRequest(goal=args["goal"]))
        launched.append(handle)
        if service.wait(handle, timeout_seconds=0).timed_out:
            return handle.to_dict()  # to look at in a later turn: a subagent has none
        return service.result(handle).to_dict()

    ctx.register_tool("research", "Research in a subagent.", {"type": "object"}, research)
"""


def children(request):
    goal = request.metadata["goal"]
    if goal.startswith("outer") and request.iteration == 0:
        return {"tool_calls": [{"name": "research", "arguments": {"goal": goal.replace("outer", "inner")}}]}
    if goal.startswith("inner") or "[hang]" in goal:
        return {"hang": True}  # works on, until stopped
    return {"text": "outer done"}


async def test_a_subagents_own_children_end_when_it_does(tmp_path, monkeypatch):
    tools, hooks = ToolRegistry(), HookRegistry()
    host = ChildHost(tools=tools, hooks=hooks, delegation=DelegationSettings(max_spawn_depth=2))
    service = AsyncSubagentLifecycle(host, MemoryJournal())
    await service.start()
    plugins = PluginHost(tools, hooks)
    stops = []
    try:
        plugin = plugin_module(tmp_path, monkeypatch, "deep_research", PLUGIN)
        await plugins.load(["deep_research"], lifecycle=SubagentLifecycle(service))
        assert plugins.failures == []
        hooks.register("subagent_stop", lambda **e: stops.append((e["child_session_id"], e["child_status"])))
        parent = AgentSession(model=ScriptedModel({"leaf": children}), tools=tools.resolve(), session_id="top")
        with inside_turn(parent):
            finished = await service.launch(SubagentLaunchRequest(goal="outer, finishing"))
            assert (await service.wait(finished, timeout_seconds=5)).state is S.SUCCEEDED
            cancelled = await service.launch(SubagentLaunchRequest(goal="outer, cancelled [hang]"))
            while len(plugin.launched) < 2:
                await asyncio.sleep(0.01)
            assert (await service.cancel(cancelled)).accepted
            assert (await service.wait(cancelled, timeout_seconds=5)).state is S.CANCELLED
        view = service.host_view()
        inner = [handle.subagent_id for handle in plugin.launched]
        await asyncio.wait_for(view.wait_finished(inner), 5)
        found = await view.lookup(inner)
        assert len(found) == 2
        for snap in found.values():
            assert (snap.state, snap.error) == (S.INTERRUPTED, PARENT_ENDED)
        assert service._supervisor._live == {}
        assert sorted(stops) == sorted([(finished.subagent_id, "completed"), (cancelled.subagent_id, "interrupted"),
                                        *((sid, "interrupted") for sid in inner)])
    finally:
        plugins.close()
        await service.close()
