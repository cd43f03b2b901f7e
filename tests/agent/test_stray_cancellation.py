"""A `CancelledError` that a tool or a hook raises while nobody cancelled the turn (a future or task of its own
that something else cancelled) is that tool's or hook's failure: raised on, it ended the turn by exception, the
chat's message went unanswered, and the call that had run read `[not run: …]`. A cancellation of the turn itself
still goes through."""

import asyncio
import concurrent.futures

import pytest

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel


def thread_future_cancelled(args, ctx):
    """A plain-function tool waiting on a thread pool's future that was cancelled (a pool shut down)."""
    future = concurrent.futures.Future()
    future.cancel()
    return future.result()


async def shared_task_cancelled(args, ctx):
    """An async tool awaiting a task another caller started and then gave up on."""
    shared = asyncio.ensure_future(asyncio.Event().wait())
    await asyncio.sleep(0)
    shared.cancel()
    return await shared


def session(handler, *, hooks=None):
    tools = ToolRegistry()
    tools.add("fetch", "fetch", {"type": "object"}, handler, toolset="web")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "fetch"}]}, {"text": "it failed"}],
                                      [{"text": "next answer"}]]})
    return AgentSession(model=model, tools=tools.resolve(), hooks=hooks), model


@pytest.mark.parametrize("handler", [thread_future_cancelled, shared_task_cancelled])
async def test_a_tool_raising_cancelled_error_fails_its_call_and_the_turn_goes_on(handler):
    s, model = session(handler)
    result = await s.run_turn("fetch it")
    assert (result.exit_reason, result.text) == ("completed", "it failed")
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == ["Error: fetch failed: CancelledError: "]
    assert [e.ok for e in result.tool_trace] == [False]
    assert (await s.run_turn("and now?")).text == "next answer"


def hook_future_cancelled(**event):
    future = concurrent.futures.Future()
    future.cancel()
    return future.result()


async def hook_task_cancelled(**event):
    await shared_task_cancelled({}, None)


@pytest.mark.parametrize("hook", [hook_future_cancelled, hook_task_cancelled])
async def test_a_hook_raising_cancelled_error_is_logged_and_the_turn_goes_on(hook, caplog):
    hooks = HookRegistry()
    hooks.register("tool_end", hook, owner="audit_plugin")
    s, model = session(lambda args, ctx: "the page", hooks=hooks)
    result = await s.run_turn("fetch it")
    assert (result.exit_reason, result.text) == ("completed", "it failed")
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == ["the page"]
    assert any("hook tool_end (plugin audit_plugin" in r.getMessage() for r in caplog.records)


async def test_cancelling_the_turn_while_a_tool_runs_still_cancels_it():
    started = asyncio.Event()

    async def waits(args, ctx):
        started.set()
        await asyncio.Event().wait()

    s, _ = session(waits)
    task = asyncio.create_task(s.run_turn("fetch it"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s.running
    assert s.messages[-1]["content"] == "[not run: the turn ended before it ran]"


async def test_cancelling_the_turn_while_a_hook_runs_still_cancels_it():
    started = asyncio.Event()

    async def hook(**event):
        started.set()
        await asyncio.Event().wait()

    hooks = HookRegistry()
    hooks.register("tool_start", hook)
    s, _ = session(lambda args, ctx: "the page", hooks=hooks)
    task = asyncio.create_task(s.run_turn("fetch it"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s.running
