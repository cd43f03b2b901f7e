"""A Temporal worker masks a failure preparing a child that is no setup error (a plugin's model that fails to
say its context window) as it masks its tool and model failures (`WorkerToolbox.redact`): the failure is kept in
the workflow's history and read by the child's parent. Those: tests/lifecycle/test_child_error_masking.py."""

from __future__ import annotations

import json
import uuid

from agent import AgentSession, HookRegistry, ToolContext, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool
from lifecycle.settings import TemporalSettings

SECRET = "pt3-prepare-secret-7c2e91"


def mask(text: str) -> str:
    return text.replace(SECRET, "***")


class _WindowFromProvider:
    """A plugin's model that asks its provider for its context window when it is read, and fails to."""

    name = "plugin-model"

    @property
    def context_window(self) -> int:
        raise RuntimeError(f"GET https://llm.example/v1/models?key={SECRET} timed out")

    async def complete(self, request):  # never reached: the child is not built
        raise AssertionError("called")


async def test_a_failure_preparing_a_child_reaches_its_history_and_its_parent_masked(tmp_path, temporal_server):
    from lifecycle.temporal import ChildWorker, TemporalEngine, WorkerToolbox, connect

    settings = TemporalSettings(address=temporal_server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
    client = await connect(settings)
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: _WindowFromProvider(), redact=mask)
    host = ChildHost(tools=ToolRegistry(), hooks=HookRegistry())
    service = AsyncSubagentLifecycle(host, SqliteJournal(tmp_path / "journal.db"),
                                     engine=TemporalEngine(settings, client=client))
    host.tools.register(delegate_tool(service))
    parent = AgentSession(model=ScriptedModel({}), tools=host.tools.resolve(), session_id="parent-1",
                          workspace=tmp_path, redact=mask)
    async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
        await service.start()
        try:
            result = await host.tools.get("delegate_task").invoke(
                {"tasks": [{"goal": "summarise"}]}, ToolContext(parent, "call-1", tmp_path, {}, "turn-1"))
        finally:
            await service.close()
        [entry] = json.loads(result)["results"]
        history = (await client.get_workflow_handle(entry["subagent_id"]).fetch_history()).to_json()
    assert entry["status"] == "error", entry
    assert entry["error"] == "RuntimeError: GET https://llm.example/v1/models?key=*** timed out"
    assert "llm.example" in history and SECRET not in history
