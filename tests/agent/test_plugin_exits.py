"""``sys.exit()`` in a plugin's tool or hook at run time. SystemExit is no Exception: it went up through
the turn, and asyncio re-raises a task's SystemExit out of the event loop, so the gateway stopped. It
fails that call or hook as any other error does; KeyboardInterrupt and cancellation still go through."""

from __future__ import annotations

import asyncio
import logging
import sys
import textwrap
from pathlib import Path

import pytest

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent._tools import ToolContext
from agent.models.scripted import ScriptedModel

EXITING = """
import sys

SEEN = []

def plain_tool(args, ctx):
    sys.exit(3)

async def async_tool(args, ctx):
    sys.exit("no token")

async def _exits():
    sys.exit(4)

def plain_hook(**event):
    sys.exit(5)

async def async_hook(**event):
    sys.exit(6)

def register(ctx):
    ctx.register_tool("plain_exit", "x", {"type": "object"}, plain_tool)
    ctx.register_tool("async_exit", "x", {"type": "object"}, async_tool)
    ctx.register_tool("late_exit", "x", {"type": "object"}, lambda args, c: _exits())
    ctx.register_tool("fine", "x", {"type": "object"}, lambda args, c: "fine")
    for name in ("turn_start", "tool_end", "turn_end"):
        ctx.register_hook(name, plain_hook)
        ctx.register_hook(name, async_hook)
        ctx.register_hook(name, lambda **event: _exits())
        ctx.register_hook(name, lambda **event: SEEN.append(event["turn_id"]))
"""


@pytest.fixture
async def host(tmp_path: Path, monkeypatch):
    (tmp_path / "exiting_plugin.py").write_text(textwrap.dedent(EXITING))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exiting_plugin", raising=False)
    plugins = PluginHost(ToolRegistry(), HookRegistry())
    await plugins.load(["exiting_plugin"])
    assert plugins.loaded == ["exiting_plugin"]
    yield plugins
    plugins.hooks.close()


async def test_a_tool_or_hook_that_exits_fails_that_call_and_the_turn_goes_on(host, caplog):
    calls = [{"name": n} for n in ("plain_exit", "async_exit", "late_exit", "fine")]
    model = ScriptedModel({"parent": [[{"tool_calls": calls}, {"text": "done anyway"}]]})
    session = AgentSession(model=model, tools=host.tools.resolve(), hooks=host.hooks)
    # A host coroutine hook (no plugin) is awaited in the turn's own task: the same holds for it.
    host.hooks.register("turn_end", _host_hook_that_exits)
    with caplog.at_level(logging.WARNING):
        result = await session.run_turn("go", turn_id="t-1")
    assert (result.exit_reason, result.text) == ("completed", "done anyway")
    assert [m["content"] for m in session.messages if m["role"] == "tool"] == [
        "Error: plain_exit failed: SystemExit: 3", "Error: async_exit failed: SystemExit: no token",
        "Error: late_exit failed: SystemExit: 4", "fine"]
    assert [e.ok for e in result.tool_trace] == [False, False, False, True]
    import exiting_plugin
    assert exiting_plugin.SEEN == ["t-1"] * 6  # turn_start, four tool_end, turn_end: the later hooks ran
    failed = [r for r in caplog.records if r.name == "agent.hooks" and "failed" in r.getMessage()]
    assert len(failed) == 3 * 6 + 1  # three exiting hooks at each of six events, and the host's
    # The loop is still running, and so is a turn after it.
    model.script["parent"].append([{"text": "again"}])
    assert (await session.run_turn("more")).text == "again"


async def test_a_tool_that_exits_fails_its_call_in_a_session_with_no_hooks(host):
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "async_exit"}, {"name": "plain_exit"}]},
                                       {"text": "went on"}]]})
    session = AgentSession(model=model, tools=host.tools.resolve())
    result = await session.run_turn("go")
    assert (result.exit_reason, result.text) == ("completed", "went on")
    assert [m["content"] for m in session.messages if m["role"] == "tool"] == [
        "Error: async_exit failed: SystemExit: no token", "Error: plain_exit failed: SystemExit: 3"]


async def _host_hook_that_exits(**event):
    sys.exit(7)


async def test_keyboard_interrupt_from_a_tool_or_hook_still_goes_through(host):
    def interrupted(args, ctx):
        raise KeyboardInterrupt

    async def interrupted_async(args, ctx):
        raise KeyboardInterrupt

    registry = ToolRegistry()
    ctx = ToolContext(session=None, call_id="c1", workspace=Path("."))
    for handler in (interrupted, interrupted_async):
        tool = registry.add(handler.__name__, "x", {"type": "object"}, handler, toolset="test")
        with pytest.raises(KeyboardInterrupt):
            await tool.invoke({}, ctx)
    hooks = HookRegistry()

    async def hook(**event):
        raise KeyboardInterrupt

    hooks.register("turn_end", hook)
    with pytest.raises(KeyboardInterrupt):
        await hooks.run("turn_end", turn_id="t")


async def test_a_tool_cancelled_while_it_runs_is_still_cancelled():
    started = asyncio.Event()

    async def waits(args, ctx):
        started.set()
        await asyncio.Event().wait()

    tool = ToolRegistry().add("waits", "x", {"type": "object"}, waits, toolset="test")
    running = asyncio.ensure_future(tool.invoke({}, ToolContext(session=None, call_id="c1", workspace=Path("."))))
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
