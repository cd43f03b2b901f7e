"""docs/lifecycle.md "One path for every child": a child gives its place under ``lifecycle.max_running`` up as its end
is reported, before its ``subagent_stop`` hooks run, and those run in the context of the parent turn that launched
it. A hook that launched a follow-up child and waited for it waited 10 s (the hook timeout) with every place held:
the new child queued for the place the ending child gave up only once its hooks returned. A queued child ran its
hooks in the context of the child whose end freed its place, another chat's turn: a hook that launched there
launched for that chat."""

from __future__ import annotations

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry, active_turn
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentLifecycle
from lifecycle import SubagentState as S
from lifecycle.settings import LifecycleSettings
from tests.plugin_modules import plugin_module

PLUGIN = """
from lifecycle import SubagentLaunchRequest

followed = []


def register(ctx):
    service = ctx.subagent_lifecycle

    async def follow_up(**event):
        if event["child_summary"] != "draft":
            return
        handle = await service.aio.launch(SubagentLaunchRequest(goal="review the draft"))
        followed.append((await service.aio.wait(handle, timeout_seconds=30)).state)

    ctx.register_hook("subagent_stop", follow_up)
"""


async def test_a_stop_hook_waits_for_the_child_it_launched_with_every_place_held(tmp_path, monkeypatch):
    tools, hooks = ToolRegistry(), HookRegistry(timeout_seconds=5)
    service = AsyncSubagentLifecycle(ChildHost(tools=tools, hooks=hooks), MemoryJournal(),
                                     settings=LifecycleSettings(max_running=1))
    await service.start()
    plugins = PluginHost(tools, hooks)
    try:
        plugin = plugin_module(tmp_path, monkeypatch, "follow_up_plugin", PLUGIN)
        await plugins.load(["follow_up_plugin"], lifecycle=SubagentLifecycle(service))
        assert plugins.failures == []
        model = ScriptedModel({"leaf": lambda r: {"text": "draft" if r.metadata["goal"] == "draft" else "fine"}})
        with inside_turn(AgentSession(model=model, session_id="top")):
            handle = await service.launch(SubagentLaunchRequest(goal="draft"))
            # Published after its hooks: the follow-up ran to its end within them, not after their timeout.
            assert (await service.wait(handle, timeout_seconds=3)).state is S.SUCCEEDED
        assert plugin.followed == [S.SUCCEEDED]
        assert service.engine.running == 0
    finally:
        plugins.close()
        await service.close()


async def test_a_queued_childs_hooks_run_in_the_turn_that_launched_it_not_another_chats():
    hooks = HookRegistry()
    turns = {}

    async def seen(**event):
        turns[event["child_session_id"], event["hook"]] = active_turn().session.session_id

    hooks.register("subagent_start", lambda **e: seen(hook="start", child_session_id=e["child_subagent_id"]))
    hooks.register("subagent_stop", lambda **e: seen(hook="stop", child_session_id=e["child_session_id"]))
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=hooks), MemoryJournal(),
                                     settings=LifecycleSettings(max_running=1))
    await service.start()
    try:
        model = ScriptedModel({"leaf": lambda r: {"wait": r.metadata["goal"], "text": "done"}})
        with inside_turn(AgentSession(model=model, session_id="chat-a")):
            first = await service.launch(SubagentLaunchRequest(goal="a"))
        with inside_turn(AgentSession(model=model, session_id="chat-b")):
            queued = await service.launch(SubagentLaunchRequest(goal="b"))  # waits for chat-a's child's place
            assert (await service.status(queued)).state is S.PENDING
            model.release("a")
            model.release("b")
            assert (await service.wait(queued, timeout_seconds=5)).state is S.SUCCEEDED
        assert turns == {(first.subagent_id, "start"): "chat-a", (first.subagent_id, "stop"): "chat-a",
                         (queued.subagent_id, "start"): "chat-b", (queued.subagent_id, "stop"): "chat-b"}
    finally:
        await service.close()
