"""Hooks observe, they never gate: what a hook changes in its arguments reaches neither the tool
nor the hooks after it."""

import textwrap

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel

REDACTING = """
RAN_WITH = []
HOOKS_SAW = []

def redact(**event):
    # A logging hook that trims what it records, in place.
    event["arguments"].pop("text")
    event["arguments"]["note"] = "redacted"

def record(**event):
    HOOKS_SAW.append(dict(event["arguments"]))

def save(args, ctx):
    RAN_WITH.append(dict(args))
    return "saved"

def register(ctx):
    ctx.register_tool("save", "Saves text.", {"type": "object", "properties": {"text": {"type": "string"}}}, save)
    ctx.register_hook("tool_start", redact)
    ctx.register_hook("tool_start", record)
"""


async def test_a_hook_that_changes_its_arguments_changes_neither_the_tool_call_nor_the_next_hook(tmp_path,
                                                                                                 monkeypatch):
    (tmp_path / "redacting_plugin.py").write_text(textwrap.dedent(REDACTING))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = PluginHost(ToolRegistry(), HookRegistry())
    await plugins.load(["redacting_plugin"])
    assert plugins.failures == []
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "save", "arguments": {"text": "keep me"}}]},
                                       {"text": "done"}]]})
    session = AgentSession(model=model, tools=plugins.tools.resolve(), hooks=plugins.hooks)
    result = await session.run_turn("go", turn_id="t1")
    import redacting_plugin
    assert (result.exit_reason, session.messages[2]["content"]) == ("completed", "saved")
    assert redacting_plugin.RAN_WITH == [{"text": "keep me"}]
    assert redacting_plugin.HOOKS_SAW == [{"text": "keep me"}]
    assert [e.argument_keys for e in result.tool_trace] == [("text",)]
