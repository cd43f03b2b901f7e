"""A lifecycle service over a real SQLite journal, a parent session and scripted children."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field

import pytest

from agent import AgentSession, HookRegistry, ModelRequest, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool
from lifecycle.settings import DelegationSettings, LifecycleSettings

OBJ = {"type": "object"}
TOOLSETS = {
    "file": ["list_files", "read_file", "send_file"],
    "execute_code": ["execute_code"],
    "memory": ["memory"],
    "clarify": ["clarify"],
    "messaging": ["send_message"],
    "delegation": ["delegate_task"],
    "web": ["web_search"],
}


class FakeClock:
    """Wall time starts now and moves only when told; monotonic follows it. Sleeping
    takes real time, so monitors run at their real pace and never race ahead."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def advance(self, seconds: float) -> None:
        self.now += seconds


def child_script(request: ModelRequest) -> dict:
    """Children act on markers in their goal."""
    goal = request.metadata.get("goal", "")
    last = request.messages[-1]
    if "[gate:" in goal:  # waits until the test calls model.release(<name>)
        return {"wait": goal.split("[gate:")[1].split("]")[0], "text": f"done: {goal}"}
    if "[sleep:" in goal and request.iteration == 0:
        return {"sleep": float(goal.split("[sleep:")[1].split("]")[0]), "text": f"done: {goal}"}
    if "[tools-forever]" in goal:
        return {"text": f"step {request.iteration}", "tool_calls": [{"name": "list_files"}]}
    if "[stall-model]" in goal:
        return {"hang": True}
    if "[stall-tool]" in goal:
        return {"tool_calls": [{"name": "block"}]} if request.iteration == 0 else {"text": "unblocked"}
    if "[json-good]" in goal:
        return {"text": '{"answer": 42}'}
    if "[json-fenced]" in goal:
        return {"text": 'Here it is:\n```json\n{"answer": 7}\n```'}
    if "[json-fixable]" in goal:
        fixed = last["role"] == "user" and "answer" in str(last["content"]) and request.turn_index == 1
        return {"text": '{"answer": 1}' if fixed else '{"answer": "one"}'}
    if "[json-bad]" in goal:
        return {"text": "I refuse to write JSON"}
    if "[json-correction-fails]" in goal:
        if request.turn_index == 1:
            return {"error": "server_error", "message": "model exploded"}
        return {"text": "I refuse to write JSON"}
    if "[echo-steer]" in goal:
        notes = [m["content"] for m in request.messages if "while you were working" in str(m.get("content"))]
        if notes:
            return {"text": f"steered: {notes[-1]}"}
        return {"sleep": 0.02, "text": "thinking", "tool_calls": [{"name": "list_files"}]}
    if "[show-prompt]" in goal:
        return {"text": json.dumps({"system": request.messages[0]["content"], "first": request.messages[1]["content"]})}
    if "[hang]" in goal:
        return {"text": "partial thoughts", "tool_calls": [{"name": "list_files"}]} if request.iteration == 0 else {"hang": True}
    if "[fail]" in goal:
        return {"error": "server_error", "message": "model exploded"}
    if "[cost]" in goal:
        return {"text": f"done: {goal}", "cost_usd": 0.25}
    if "[long]" in goal:
        return {"text": "x" * 40_000}
    return {"text": f"done: {goal}"}


@dataclass
class Env:
    service: AsyncSubagentLifecycle
    parent: AgentSession
    hooks: HookRegistry
    clock: FakeClock
    child_model: ScriptedModel
    tools_seen: list = field(default_factory=list)

    def turn(self, session: AgentSession | None = None):
        return inside_turn(session or self.parent, "turn-1")


async def _block(args, ctx):
    await asyncio.Event().wait()


def make_registry(*, with_delegate_stub: bool = True) -> ToolRegistry:
    registry = ToolRegistry()
    for toolset, names in TOOLSETS.items():
        for name in names:
            if name != "delegate_task" or with_delegate_stub:
                registry.add(name, name, OBJ, lambda args, ctx: "ok", toolset=toolset)
    registry.add("block", "hangs until cancelled", OBJ, _block, toolset="file")
    return registry


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("both_engines") is not None:
        metafunc.parametrize("engine_name", ["inprocess", "temporal"], indirect=True)


@pytest.fixture
def engine_name(request):
    """The engine `make_env` builds when a test names none; ``both_engines`` tests get each."""
    return getattr(request, "param", "inprocess")


@pytest.fixture
async def make_env(tmp_path, request, engine_name):
    services = []
    workers = TemporalWorkers(request) if engine_name == "temporal" else None

    async def make(*, max_running: int = 10, retention: float = 3600.0, delegation=None, enabled=None,
                   db="journal.db", sweep=60.0, clock=None, delegate=False, engine=None, hold_ends=False) -> Env:
        registry = make_registry(with_delegate_stub=not delegate)
        hooks = HookRegistry()
        clock = clock or FakeClock()
        model = ScriptedModel({"leaf": child_script, "orchestrator": child_script, "parent": [[{"text": "hi"}]]})
        if engine is None and workers is not None:
            engine = await workers.engine(registry, model)
        host = ChildHost(tools=registry, hooks=hooks, delegation=delegation or DelegationSettings(), clock=clock)
        service = AsyncSubagentLifecycle(
            host, SqliteJournal(tmp_path / db),
            settings=LifecycleSettings(max_running=max_running, retention_seconds=retention, sweep_interval_seconds=sweep),
            engine=engine,
        )
        if delegate:
            registry.register(delegate_tool(service))
        parent = AgentSession(model=model, tools=registry.resolve(enabled), session_id="parent-1",
                              enabled_toolsets=frozenset(enabled) if enabled else None, clock=clock,
                              workspace=tmp_path)
        await service.start(hold_ends=hold_ends)
        services.append(service)
        return Env(service, parent, hooks, clock, model)

    yield make
    for service in services:
        await service.close()
    if workers is not None:
        await workers.close()


class TemporalWorkers:
    """Children on the session's Temporal dev server: each environment gets a task queue of its
    own, served by a `ChildWorker` in this process that builds children from that
    environment's tools and model."""

    def __init__(self, request) -> None:
        self.server = request.getfixturevalue("temporal_server")
        self.client = None
        self.workers = []

    async def engine(self, registry, model):
        from lifecycle.settings import TemporalSettings
        from lifecycle.temporal import ChildWorker, TemporalEngine, WorkerToolbox, connect

        settings = TemporalSettings(address=self.server.address, task_queue=f"test-{uuid.uuid4().hex[:12]}")
        if self.client is None:
            self.client = await connect(settings)
        toolbox = WorkerToolbox(tools=registry, model_for=lambda provider, name: model)
        worker = ChildWorker(self.client, settings.task_queue, toolbox, heartbeat_seconds=0.2)
        await worker.__aenter__()
        self.workers.append(worker)
        return TemporalEngine(settings, client=self.client)

    async def close(self) -> None:
        for worker in self.workers:
            await worker.__aexit__(None, None, None)


@pytest.fixture
async def env(make_env):
    return await make_env()


@pytest.fixture
async def queue(temporal_server):
    """A task queue of this test's own, a client, and a worker on it built from ``tools``/``model``."""
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    settings = TemporalSettings(address=temporal_server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
    client = await connect(settings)
    workers = []

    async def worker(model, tools=None):
        toolbox = WorkerToolbox(tools=tools or make_registry(), model_for=lambda provider, name: model)
        running = ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2)
        await running.__aenter__()
        workers.append(running)
        return running

    yield settings, client, worker
    for running in workers:
        await running.__aexit__(None, None, None)
