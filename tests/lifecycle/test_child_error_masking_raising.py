"""A host's redactor that raises while a child's error is masked (`AgentSession.redact`, the parent's) must not
keep the child from ending: the error is then not shown, and the child still ends with its result."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent import AgentSession, HookRegistry, ModelRequest, ToolContext, ToolRegistry
from agent._errors import model_failure_text
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool

SECRET = "pt3-raising-secret-5c1e"


def broken_mask(text: str) -> str:
    raise ValueError(f"cannot mask {text!r}")


def failing_call(request: ModelRequest) -> dict:
    return {"error": "auth", "message": model_failure_text("auth", f"key {SECRET} was revoked")}


def crashing_model(request: ModelRequest) -> dict:
    raise RuntimeError(f"proxy refused key {SECRET}")


async def _delegated(tmp_path, leaf) -> dict:
    host = ChildHost(tools=ToolRegistry(), hooks=HookRegistry())
    service = AsyncSubagentLifecycle(host, SqliteJournal(tmp_path / "journal.db"))
    host.tools.register(delegate_tool(service))
    parent = AgentSession(model=ScriptedModel({"leaf": leaf}), tools=host.tools.resolve(), session_id="parent-1",
                          workspace=tmp_path, redact=broken_mask)
    await service.start()
    try:
        tool = host.tools.get("delegate_task")
        # Bounded: a child whose end is never reported leaves delegate_task waiting for ever.
        result = await asyncio.wait_for(tool.invoke({"goal": "look it up"},
                                                    ToolContext(parent, "call-1", tmp_path, {}, "turn-1")), 10)
    finally:
        await service.close()
    [entry] = json.loads(result)["results"]
    return entry


async def test_a_failed_model_call_whose_mask_raises_still_ends_the_child_without_its_words(tmp_path):
    entry = await _delegated(tmp_path, failing_call)
    # Its kind kept: the chat's words for the failure are read from it (`gateway.replies.child_failure_reason`).
    assert entry["status"] == "failed", entry
    assert entry["error"] == "model request failed (auth): what went wrong is not shown (it could not be masked)"


async def test_a_crash_whose_mask_raises_still_ends_the_child_without_its_words(tmp_path):
    entry = await _delegated(tmp_path, crashing_model)
    assert entry["status"] == "error", entry
    assert entry["error"] == "RuntimeError: what went wrong is not shown (it could not be masked)"


async def test_a_workers_tool_failure_whose_mask_raises_is_reported_not_raised(tmp_path):
    """Raised, the failure failed the tool call's activity, which Temporal ran again (the tool and all it did)
    until the child's stall limit."""
    pytest.importorskip("temporalio")
    from temporalio.testing import ActivityEnvironment

    from lifecycle._job import ChildJob
    from lifecycle.temporal import WorkerToolbox
    from lifecycle.temporal._activities import ChildActivities

    calls = []

    async def leak(args, ctx):
        calls.append(args)
        raise RuntimeError(f"401 for https://api.example/send?key={SECRET}")

    tools = ToolRegistry()
    tools.add("leak", "Calls an API.", {"type": "object", "properties": {}}, leak, toolset="web")
    model = ScriptedModel({"leaf": [[{"text": "never asked"}]]})
    activities = ChildActivities(WorkerToolbox(tools=tools, model_for=lambda provider, name: model,
                                               redact=broken_mask))
    job = ChildJob(subagent_id="sa-raising-1", parent_session_id="p", parent_turn_id="t", goal="g", tools=("leak",),
                   workspace=str(tmp_path))
    body = {"name": "leak", "args": {}, "child": job.to_dict(), "call_id": "c1", "turn_id": "t1"}
    result = await ActivityEnvironment().run(activities.tool_call, body)
    assert result == {"ok": False, "error": "leak failed: what went wrong is not shown (it could not be masked)"}
    assert len(calls) == 1
