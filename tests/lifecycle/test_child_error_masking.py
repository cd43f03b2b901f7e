"""A child's error reaches its parent model masked by the parent's redactor (`AgentSession.redact`), also one
that failed before its session was built; on Temporal's workers, a child's tool failures and failed model calls
are masked there (`WorkerToolbox.redact`), before the child's model, its workflow's history and its parent read
them. (A failed model call and a crash in the gateway: tests/gateway/test_child_failure_redaction.py.)"""

from __future__ import annotations

import json
import uuid

from agent import AgentSession, CompactionPolicy, HookRegistry, ModelRequest, ToolContext, ToolRegistry
from agent._errors import model_failure_text
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool
from lifecycle.settings import TemporalSettings

SECRET = "pt3-lifecycle-secret-0b7e5d"
OBJ = {"type": "object", "properties": {}}


def mask(text: str) -> str:
    return text.replace(SECRET, "***")


class _UnreachableSummarizer(CompactionPolicy):
    """A compaction policy that cannot make a child's: the child fails to start, saying why."""

    def for_child(self, child_threshold_tokens: int) -> CompactionPolicy:
        raise RuntimeError(f"no summarizer at https://summarizer.example/?key={SECRET}")


async def _leak(args, ctx):
    raise RuntimeError(f"401 for https://api.example/send?key={SECRET}")


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.add("leak", "Calls an API.", OBJ, _leak, toolset="web")
    return registry


async def _delegated(tmp_path, host: ChildHost, model: ScriptedModel, goals: list[str], engine=None) -> list[dict]:
    """The entries of an inline delegate_task of ``goals`` by a parent whose redactor is `mask`."""
    service = AsyncSubagentLifecycle(host, SqliteJournal(tmp_path / "journal.db"), engine=engine)
    host.tools.register(delegate_tool(service))
    parent = AgentSession(model=model, tools=host.tools.resolve(), session_id="parent-1", workspace=tmp_path,
                          redact=mask)
    await service.start()
    try:
        tool = host.tools.get("delegate_task")
        result = await tool.invoke({"tasks": [{"goal": g} for g in goals]},
                                   ToolContext(parent, "call-1", tmp_path, {}, "turn-1"))
    finally:
        await service.close()
    return json.loads(result)["results"]


async def test_a_child_that_fails_to_start_reaches_the_parent_masked(tmp_path):
    host = ChildHost(tools=_registry(), hooks=HookRegistry(), compaction=_UnreachableSummarizer())
    model = ScriptedModel({"leaf": [[{"text": "never asked"}]]})
    [entry] = await _delegated(tmp_path, host, model, ["look it up"])
    assert entry["status"] == "error", entry
    assert entry["error"] == "RuntimeError: no summarizer at https://summarizer.example/?key=***"
    assert not [r for r in model.requests if r.role == "leaf"]


def _child(request: ModelRequest) -> dict:
    """``leak``: calls it, then answers with what it read; ``fail``: its model call fails quoting the secret."""
    if request.metadata["goal"] == "fail":
        return {"error": "auth", "message": model_failure_text("auth", f"key {SECRET} was revoked")}
    if request.iteration == 0:
        return {"tool_calls": [{"name": "leak"}]}
    return {"text": f"It said: {request.messages[-1]['content']}"}


async def test_a_temporal_workers_failures_reach_the_child_and_its_parent_masked(tmp_path, temporal_server):
    from lifecycle.temporal import ChildWorker, TemporalEngine, WorkerToolbox, connect

    settings = TemporalSettings(address=temporal_server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
    client = await connect(settings)
    model = ScriptedModel({"leaf": _child})
    toolbox = WorkerToolbox(tools=_registry(), model_for=lambda provider, name: model, redact=mask)
    host = ChildHost(tools=_registry(), hooks=HookRegistry())
    async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
        leaked, failed = await _delegated(tmp_path, host, model, ["leak", "fail"],
                                          engine=TemporalEngine(settings, client=client))
        histories = [(await client.get_workflow_handle(e["subagent_id"]).fetch_history()).to_json()
                     for e in (leaked, failed)]
    [read] = [m["content"] for r in model.requests if r.iteration == 1 for m in r.messages if m["role"] == "tool"]
    assert read == "Error: leak failed: RuntimeError: 401 for https://api.example/send?key=***"
    assert leaked["status"] == "completed" and leaked["summary"] == f"It said: {read}", leaked
    assert failed["status"] == "failed" and failed["error"] == "model request failed (auth): key *** was revoked"
    assert all(SECRET not in h for h in histories)
