"""The synchronous facade from plugin tools and threads (the Usage example of docs/lifecycle.md
runs as written in test_usage_example.py)."""

import asyncio
import json
import textwrap

import pytest

from agent import AgentSession, PluginHost
from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError, SubagentState
from tests.lifecycle.conftest import child_script
from tests.polling import until

PLUGIN = '''
from lifecycle import SubagentLaunchRequest

def launch_review(ctx):
    # called from a plugin tool or hook while an agent turn is active
    service = ctx.subagent_lifecycle
    handle = service.launch(SubagentLaunchRequest(
        goal="Review this change for regressions.",
        context="Only inspect the supplied repository.",
        role="leaf",
        correlation_id="review-42",
        allowed_toolsets=("file",),
    ))
    # persist handle.to_dict() if desired
    if service.wait(handle, timeout_seconds=2).timed_out:
        return handle.to_dict()
    return service.result(handle)

def register(ctx):
    ctx.register_tool("review", "Start a review.", {"type": "object"},
                      lambda args, tool_ctx: _summary(launch_review(ctx)), toolset="review")

def _summary(result):
    return {"state": result.state.value, "summary": result.summary, "hash": result.result_hash}
'''


async def test_the_facade_works_from_a_plugin_tool(env, tmp_path, monkeypatch):
    (tmp_path / "review_plugin.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = env.service.host.tools
    plugins = PluginHost(registry, env.hooks)
    await plugins.load(["review_plugin"], lifecycle=SubagentLifecycle(env.service))
    assert plugins.failures == []
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "review"}]}, {"text": "reviewed"}]],
                           "leaf": child_script})
    parent = AgentSession(model=model, tools=registry.resolve(), session_id="parent-1")
    result = await parent.run_turn("please review")
    assert result.exit_reason == "completed"
    tool_output = json.loads(parent.messages[2]["content"])
    assert tool_output["state"] == "SUCCEEDED"
    assert tool_output["summary"] == "done: Review this change for regressions."


async def test_the_sync_facade_refuses_the_event_loop_thread(env):
    facade = SubagentLifecycle(env.service)
    with env.turn(), pytest.raises(SubagentLifecycleError, match="event-loop thread"):
        facade.status({"nope": 1})
    assert facade.aio is env.service


async def test_the_sync_facade_outside_a_turn_fails_closed(env):
    import asyncio

    from lifecycle import SubagentLaunchRequest

    facade = SubagentLifecycle(env.service)
    with pytest.raises(SubagentLifecycleError, match="No active parent session"):
        await asyncio.to_thread(facade.launch, SubagentLaunchRequest(goal="x"))
    status = await asyncio.to_thread(facade.status, {"garbage": True})
    assert status.state is SubagentState.UNKNOWN


async def test_a_plugin_steers_a_running_child_through_the_sync_facade(env):
    facade = SubagentLifecycle(env.service)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[echo-steer]"))
        await until(lambda: env.child_model.requests)  # its first model call: it runs
        assert await asyncio.to_thread(facade.steer, handle, "wrap up") is True
        assert (await env.service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED
        assert "wrap up" in (await env.service.result(handle)).summary
