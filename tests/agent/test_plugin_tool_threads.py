"""Plugins' plain-function tools that hang (a service with no timeout) must not stall other chats' tools."""

from __future__ import annotations

import asyncio
import logging
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agent import AgentSession, HookRegistry, PluginHost, PluginThreads, ToolContext, ToolRegistry
from agent._plugins import PLUGIN_TOOL_THREADS_PER_CHAT
from agent.models.scripted import ScriptedModel
from tests.polling import until

PLUGIN = """
import threading

RELEASE = threading.Event()
STARTED = []

def slow(args, ctx):
    STARTED.append(args["n"])
    RELEASE.wait()
    return "slow done"

def register(ctx):
    ctx.register_tool("slow", "Asks a service that hangs.", {"type": "object"}, slow)
    ctx.register_tool("fast", "Answers at once.", {"type": "object"}, lambda args, c: "fast done")
"""


@pytest.fixture
async def plugin(tmp_path, monkeypatch):
    (tmp_path / "hanging_service_plugin.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hanging_service_plugin", raising=False)  # each test's own RELEASE
    host = PluginHost(ToolRegistry(), HookRegistry())
    await host.load(["hanging_service_plugin"])
    import hanging_service_plugin
    try:
        yield host, hanging_service_plugin
    finally:
        hanging_service_plugin.RELEASE.set()
        host.close()


def _ctx(session: AgentSession) -> ToolContext:
    return ToolContext(session, "call-1", Path("."))


def _session(**kwargs) -> AgentSession:
    return AgentSession(model=ScriptedModel(), **kwargs)


async def test_one_chats_hung_tool_calls_leave_threads_to_the_other_chats(plugin, caplog):
    # With 8 calls of one chat hung in a plugin tool, every other chat's plain-function plugin tool
    # waited behind them (its card read "Running fast — 2 s") until one returned.
    host, module = plugin
    tools = host.tools.resolve()
    chat_a, chat_b = _session(), _session()
    children = [_session(metadata={"parent_session_id": chat_a.session_id}) for _ in range(20)]
    a_calls = [asyncio.ensure_future(tools["slow"].invoke({"n": n}, _ctx(s)))
               for n, s in enumerate([chat_a, *children])]
    await until(lambda: len(module.STARTED) == PLUGIN_TOOL_THREADS_PER_CHAT, timeout=5)
    with caplog.at_level(logging.WARNING, logger="agent.plugins"):
        assert await asyncio.wait_for(tools["fast"].invoke({}, _ctx(chat_b)), timeout=5) == "fast done"
    assert len(module.STARTED) == PLUGIN_TOOL_THREADS_PER_CHAT  # chat A's others wait for its share
    waits = [r.getMessage() for r in caplog.records if "waits" in r.getMessage()]
    assert waits == [f"8 plugin-tool calls for session {chat_a.session_id} and its subagents are running, as many"
                     " as one may have; tool slow (plugin hanging_service_plugin) waits for one to end"]
    module.RELEASE.set()
    assert await asyncio.wait_for(asyncio.gather(*a_calls), timeout=5) == ["slow done"] * 21


async def test_a_hung_tool_call_in_each_of_many_chats_leaves_threads_to_the_next(plugin):
    # The case as measured: 8 chats each inside a 60 s tool call, and a 9th chat's instant tool did not run.
    host, module = plugin
    tools = host.tools.resolve()
    hung = [asyncio.ensure_future(tools["slow"].invoke({"n": n}, _ctx(_session()))) for n in range(8)]
    await until(lambda: len(module.STARTED) == 8, timeout=5)
    assert await asyncio.wait_for(tools["fast"].invoke({}, _ctx(_session())), timeout=5) == "fast done"
    module.RELEASE.set()
    await asyncio.wait_for(asyncio.gather(*hung), timeout=5)


async def test_calls_past_every_thread_wait_with_one_log_line_and_run_when_one_frees(caplog):
    release = threading.Event()
    threads = PluginThreads(2, "test", per_key=1)
    try:
        with caplog.at_level(logging.WARNING, logger="agent.plugins"):
            first = threads.submit("call a", release.wait, "chat a")
            threads.submit("call b", release.wait, "chat b")
            waiting = [threads.submit(f"call {c}", lambda: "ran", f"chat {c}") for c in "cde"]
        assert [r.getMessage() for r in caplog.records] == [
            "2 test calls are running, as many as may run at once; call c waits for one to end"]
        assert not any(f.running() or f.done() for f in waiting)
        release.set()
        assert await asyncio.wait_for(asyncio.gather(*map(asyncio.wrap_future, waiting)), timeout=5) == ["ran"] * 3
        assert await asyncio.wrap_future(first) is True
    finally:
        threads.close()


async def test_close_cancels_calls_that_wait_and_names_those_that_run():
    started, release = threading.Event(), threading.Event()
    threads = PluginThreads(4, "test", per_key=1)
    try:
        threads.submit("call a1", lambda: (started.set(), release.wait()), "chat a")
        waiting = threads.submit("call a2", lambda: "ran", "chat a")
        await until(started.is_set, timeout=5)
        assert threads.close() == ["call a1"]
        assert waiting.cancelled()
        with pytest.raises(RuntimeError, match="test threads are closed"):
            threads.submit("call b", lambda: "ran", "chat b")
    finally:
        release.set()
