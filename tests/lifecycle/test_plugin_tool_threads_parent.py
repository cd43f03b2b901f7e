"""docs/lifecycle.md "The parent": a thread a plugin's tool starts itself has no turn to launch from,
unless it runs in a copy of the tool's context variables, as the docs say to do."""

from __future__ import annotations

import json

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLifecycle
from tests.plugin_modules import plugin_module

PLUGIN = """
import concurrent.futures
import contextvars
import threading

from lifecycle import SubagentLaunchRequest, SubagentLifecycleError


def register(ctx):
    service = ctx.subagent_lifecycle

    def work():
        try:
            handle = service.launch(SubagentLaunchRequest(goal="Review this change."))
        except SubagentLifecycleError as exc:
            return str(exc)
        return service.wait(handle, timeout_seconds=5).state.value

    def fan_out(args, tool_ctx):
        answers = {}
        bare = threading.Thread(target=lambda: answers.update(bare=work()))
        copied = threading.Thread(target=contextvars.copy_context().run,
                                  args=(lambda: answers.update(copied=work()),))
        for thread in (bare, copied):
            thread.start()
            thread.join()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answers["pool"] = pool.submit(contextvars.copy_context().run, work).result()
        return answers

    ctx.register_tool("fan_out", "Review in threads.", {"type": "object"}, fan_out)
"""


async def test_only_threads_run_in_a_copy_of_the_tools_context_launch_children(tmp_path, monkeypatch):
    tools, hooks = ToolRegistry(), HookRegistry()
    service = AsyncSubagentLifecycle(ChildHost(tools=tools, hooks=hooks), MemoryJournal())
    await service.start()
    plugins = PluginHost(tools, hooks)
    try:
        plugin_module(tmp_path, monkeypatch, "threaded_review", PLUGIN)
        await plugins.load(["threaded_review"], lifecycle=SubagentLifecycle(service))
        assert plugins.failures == []
        model = ScriptedModel({
            "parent": [[{"tool_calls": [{"name": "fan_out", "arguments": {}}]}, {"text": "reviewed"}]],
            "leaf": lambda request: {"text": "No regressions found."},
        })
        parent = AgentSession(model=model, tools=tools.resolve())
        assert (await parent.run_turn("Review my change.")).text == "reviewed"
        (answer,) = [m["content"] for m in parent.messages if m["role"] == "tool"]
        assert json.loads(answer) == {
            "bare": "No active parent session is available.", "copied": "SUCCEEDED", "pool": "SUCCEEDED",
        }
    finally:
        plugins.close()
        await service.close()
