"""A plugin's tool that launches a subagent is inherited by that subagent, which can call it too. Launched from
a child at `delegation.max_spawn_depth`, the launch nested one level deeper each time (a leaf at depth 11 within
a second, the limit 1), every level holding a place under `lifecycle.max_running` while it waited for the next:
the lifecycle API is refused there, as `delegate_task` is never given to such a child."""

from __future__ import annotations

import json

import pytest

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import (
    AsyncSubagentLifecycle,
    ChildHost,
    MemoryJournal,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
)
from lifecycle.settings import DelegationSettings
from tests.plugin_modules import plugin_module

PLUGIN = """
from lifecycle import SubagentLaunchRequest, SubagentLifecycleError


def register(ctx):
    service = ctx.subagent_lifecycle

    def research(args, tool_ctx):
        try:
            handle = service.launch(SubagentLaunchRequest(goal="Research this.", role=args.get("role", "leaf")))
        except SubagentLifecycleError as refused:
            return {"refused": str(refused), "code": refused.code}
        done = service.wait(handle, timeout_seconds=5)
        return {"depth": handle.depth, "state": done.state.value, "summary": service.result(handle).summary}

    ctx.register_tool("research", "Research in a subagent.", {"type": "object"}, research)
"""


def answers(session: AgentSession) -> list[dict]:
    return [json.loads(m["content"]) for m in session.messages if m["role"] == "tool"]


async def run(tmp_path, monkeypatch, max_spawn_depth: int, role: str) -> tuple[list[dict], list[dict]]:
    """The parent calls the plugin's tool; every child calls it once too, then answers with what it read."""
    tools, hooks = ToolRegistry(), HookRegistry()
    host = ChildHost(tools=tools, hooks=hooks, delegation=DelegationSettings(max_spawn_depth=max_spawn_depth))
    service = AsyncSubagentLifecycle(host, MemoryJournal())
    await service.start()
    plugins = PluginHost(tools, hooks)
    try:
        plugin_module(tmp_path, monkeypatch, "nesting_research", PLUGIN)
        await plugins.load(["nesting_research"], lifecycle=SubagentLifecycle(service))
        assert plugins.failures == []
        research = {"tool_calls": [{"name": "research", "arguments": {"role": role}}]}

        def child(request):  # each child calls the tool first, then answers with what that call said
            told = [m["content"] for m in request.messages if m["role"] == "tool"]
            return {"text": told[0]} if told else research

        model = ScriptedModel({"parent": [[research, {"text": "done"}]], "leaf": child, "orchestrator": child})
        parent = AgentSession(model=model, tools=tools.resolve())
        assert (await parent.run_turn("Research it.")).text == "done"
        (top,) = answers(parent)
        nested = []
        summary = top.get("summary")
        while summary is not None:  # each level's answer is the tool result it read
            nested.append(json.loads(summary))
            summary = nested[-1].get("summary")
        return [top], nested
    finally:
        plugins.close()
        await service.close()


async def test_a_leaf_at_the_depth_limit_cannot_launch_through_a_plugin(tmp_path, monkeypatch):
    (top,), nested = await run(tmp_path, monkeypatch, max_spawn_depth=1, role="leaf")
    assert (top["depth"], top["state"]) == (1, "SUCCEEDED")
    assert nested == [{
        "refused": "Subagents nest at most 1 level deep (delegation.max_spawn_depth): this session is a subagent"
                   " at depth 1, and may not launch one.",
        "code": "DEPTH_LIMIT",
    }]


async def test_an_orchestrator_below_the_limit_launches_and_its_child_at_the_limit_cannot(tmp_path, monkeypatch):
    (top,), nested = await run(tmp_path, monkeypatch, max_spawn_depth=2, role="orchestrator")
    assert (top["depth"], top["state"]) == (1, "SUCCEEDED")
    assert (nested[0]["depth"], nested[0]["state"]) == (2, "SUCCEEDED")
    assert nested[1] == {
        "refused": "Subagents nest at most 2 levels deep (delegation.max_spawn_depth): this session is a subagent"
                   " at depth 2, and may not launch one.",
        "code": "DEPTH_LIMIT",
    }
    assert len(nested) == 2


async def test_the_depth_refusal_comes_before_anything_is_journaled():
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())
    await service.start()
    try:
        child = AgentSession(model=ScriptedModel({}), role="leaf", depth=1)
        with inside_turn(child):
            with pytest.raises(SubagentLifecycleError) as refused:
                await service.launch(SubagentLaunchRequest(goal="deeper", correlation_id="c-1"))
        assert refused.value.code == "DEPTH_LIMIT"
        assert service.host_view().children(child.session_id) == ()
        assert not await service.journal.holds_records()
    finally:
        await service.close()
