"""docs/lifecycle.md "Usage": its plugin loads and runs as written, through a parent's real turn."""

import json
import re
from pathlib import Path

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLifecycle
from tests.plugin_modules import plugin_module

DOC = Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md"


def usage_code() -> str:
    section = DOC.read_text(encoding="utf-8").split("\n## Usage\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    return code


async def test_the_documented_plugin_launches_a_child_and_answers_with_its_result(tmp_path, monkeypatch):
    tools, hooks = ToolRegistry(), HookRegistry()
    tools.add("list_files", "List files.", {"type": "object"}, lambda args, ctx: "[]", toolset="file")
    service = AsyncSubagentLifecycle(ChildHost(tools=tools, hooks=hooks), MemoryJournal())
    await service.start()
    plugins = PluginHost(tools, hooks)
    try:
        plugin_module(tmp_path, monkeypatch, "documented_review", usage_code())
        await plugins.load(["documented_review"], lifecycle=SubagentLifecycle(service))
        assert (plugins.loaded, plugins.failures) == (["documented_review"], [])
        model = ScriptedModel({
            "parent": [[{"tool_calls": [{"name": "review", "arguments": {}}]}, {"text": "reviewed"}]],
            "leaf": lambda request: {"text": "No regressions found."},
        })
        parent = AgentSession(model=model, tools=tools.resolve())
        assert (await parent.run_turn("Review my change.")).text == "reviewed"
        (answer,) = [m["content"] for m in parent.messages if m["role"] == "tool"]
        result = json.loads(answer)
        assert (result["state"], result["summary"]) == ("SUCCEEDED", "No regressions found.")
    finally:
        plugins.close()
        await service.close()
