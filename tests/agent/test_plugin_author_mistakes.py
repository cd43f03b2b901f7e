"""What a plugin author gets wrong, met with a clear error where it happened: a registration made after
``register(ctx)`` returned, and a tool whose answer cannot be turned into text after it ran."""

import logging
import textwrap

import pytest

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent._errors import PluginError
from agent.models.scripted import ScriptedModel

KEEPER = """
KEPT = []

def register(ctx):
    KEPT.append(ctx)  # to register more later: on first use, or from a thread it starts
    ctx.register_tool("first", "x", {"type": "object"}, lambda a, c: "1")
"""
UNREADABLE = """
class Receipt:
    def __str__(self):
        raise RuntimeError("Receipt has no text")

def send(args, ctx):
    SENT.append(args)
    return {"receipt": Receipt()}

def loop(args, ctx):
    out = {}
    out["self"] = out
    return out

SENT = []

def register(ctx):
    ctx.register_tool("send_invoice", "send an invoice", {"type": "object"}, send)
    ctx.register_tool("loop", "answer a dict that holds itself", {"type": "object"}, loop)
"""


@pytest.fixture
def host(tmp_path, monkeypatch):
    for name, body in {"keeper_plugin": KEEPER, "unreadable_plugin": UNREADABLE}.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return PluginHost(ToolRegistry(), HookRegistry())


async def test_a_registration_after_register_returned_raises_instead_of_doing_nothing(host):
    await host.load(["keeper_plugin"])
    import keeper_plugin
    ctx = keeper_plugin.KEPT[-1]
    late = [
        lambda: ctx.register_tool("later", "x", {"type": "object"}, lambda a, c: "2"),
        lambda: ctx.register_hook("turn_end", lambda **e: None),
        lambda: ctx.register_command("later", lambda a, c: "2"),
    ]
    for call in late:
        with pytest.raises(PluginError, match="only while register\\(ctx\\) runs"):
            call()
    assert host.tools.get("later") is None and "later" not in host.commands and not host.hooks.has("turn_end")
    assert host.tools.get("first") is not None


async def test_a_registration_after_a_failed_load_raises_too(host, tmp_path):
    (tmp_path / "clash_keeper_plugin.py").write_text(textwrap.dedent(KEEPER))  # "first" again: fails to load
    await host.load(["keeper_plugin", "clash_keeper_plugin"])
    assert host.loaded == ["keeper_plugin"]
    import clash_keeper_plugin
    with pytest.raises(PluginError, match="only while register\\(ctx\\) runs"):
        clash_keeper_plugin.KEPT[-1].register_tool("later", "x", {"type": "object"}, lambda a, c: "2")


async def test_a_tool_whose_answer_has_no_text_tells_the_model_it_ran(host, caplog):
    await host.load(["unreadable_plugin"])
    import unreadable_plugin
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_invoice", "arguments": {"to": "a"}},
                                                        {"name": "loop"}]},
                                       {"text": "done"}]]})
    session = AgentSession(model=model, system_prompt="x", tools=host.tools.resolve(), hooks=host.hooks)
    with caplog.at_level(logging.WARNING):
        result = await session.run_turn("bill them")
    assert (result.exit_reason, result.text) == ("completed", "done")
    assert unreadable_plugin.SENT == [{"to": "a"}]
    sent, looped = [m["content"] for m in session.messages if m["role"] == "tool"]
    # "failed" had the model send the invoice again.
    assert sent == ("Error: send_invoice ran, but what it returned could not be turned into text "
                    "(RuntimeError: Receipt has no text); do not call it again only to see its result")
    assert looped.startswith("Error: loop ran, but what it returned could not be turned into text (ValueError: ")
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in lines] == [
        f"tool {name} (plugin unreadable_plugin) ran, but what it returned could not be turned into text"
        for name in ("send_invoice", "loop")]
    assert all(r.exc_info for r in lines)  # the traceback leads to the plugin's __str__
