"""docs/lifecycle.md "Usage": its plugin launches a child for each call of its tool, also when a turn calls it
twice, and when a turn runs again under its turn id (as after a crash) and its model names the calls anew: a
correlation id made from the turn alone refused the second call (`Duplicate correlation_id for this parent
session.`)."""

import json

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLifecycle
from tests.lifecycle.test_usage_example import usage_code
from tests.plugin_modules import plugin_module

REVIEW = {"name": "review", "arguments": {}}


def review_answers(session: AgentSession) -> list[tuple[str, str]]:
    answers = [json.loads(m["content"]) for m in session.messages if m["role"] == "tool"]
    return [(a["state"], a["summary"]) for a in answers]


async def loaded_plugin(tmp_path, monkeypatch):
    tools, hooks = ToolRegistry(), HookRegistry()
    tools.add("list_files", "List files.", {"type": "object"}, lambda args, ctx: "[]", toolset="file")
    service = AsyncSubagentLifecycle(ChildHost(tools=tools, hooks=hooks), MemoryJournal())
    await service.start()
    plugins = PluginHost(tools, hooks)
    plugin_module(tmp_path, monkeypatch, "documented_review_calls", usage_code())
    await plugins.load(["documented_review_calls"], lifecycle=SubagentLifecycle(service))
    assert (plugins.loaded, plugins.failures) == (["documented_review_calls"], [])
    return tools, service, plugins


async def test_a_turn_that_calls_the_documented_tool_twice_gets_a_review_from_each_call(tmp_path, monkeypatch):
    tools, service, plugins = await loaded_plugin(tmp_path, monkeypatch)
    try:
        model = ScriptedModel({
            "parent": [[{"tool_calls": [REVIEW]}, {"tool_calls": [REVIEW]}, {"text": "reviewed twice"}]],
            "leaf": lambda request: {"text": "No regressions found."},
        })
        parent = AgentSession(model=model, tools=tools.resolve())
        assert (await parent.run_turn("Review both changes.")).text == "reviewed twice"
        assert review_answers(parent) == [("SUCCEEDED", "No regressions found.")] * 2
    finally:
        plugins.close()
        await service.close()


async def test_a_turn_run_again_under_its_turn_id_reviews_again(tmp_path, monkeypatch):
    tools, service, plugins = await loaded_plugin(tmp_path, monkeypatch)
    try:
        def parent_model(call_id):  # a provider names each tool call anew when the turn asks it again
            return ScriptedModel({
                "parent": [[{"tool_calls": [{**REVIEW, "id": call_id}]}, {"text": "reviewed"}]],
                "leaf": lambda request: {"text": "No regressions found."},
            })

        first = AgentSession(model=parent_model("call_a"), tools=tools.resolve())
        assert (await first.run_turn("Review my change.", turn_id="t-replayed")).text == "reviewed"
        again = AgentSession(model=parent_model("call_b"), tools=tools.resolve(), session_id=first.session_id)
        assert (await again.run_turn("Review my change.", turn_id="t-replayed")).text == "reviewed"
        assert review_answers(again) == [("SUCCEEDED", "No regressions found.")]
    finally:
        plugins.close()
        await service.close()
