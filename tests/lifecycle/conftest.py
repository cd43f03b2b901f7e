"""A lifecycle service over a real SQLite journal, a parent session and scripted children."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from agent import AgentSession, HookRegistry, ModelRequest, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal
from lifecycle.settings import DelegationSettings, LifecycleSettings

OBJ = {"type": "object"}
TOOLSETS = {
    "file": ["list_files", "read_file"],
    "execute_code": ["execute_code"],
    "memory": ["memory"],
    "clarify": ["clarify"],
    "messaging": ["send_message"],
    "delegation": ["delegate_task"],
    "web": ["web_search"],
}


class FakeClock:
    """Wall time starts now and moves only when told; monotonic follows it."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def child_script(request: ModelRequest) -> dict:
    """Children act on markers in their goal."""
    goal = request.metadata.get("goal", "")
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


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for toolset, names in TOOLSETS.items():
        for name in names:
            registry.add(name, name, OBJ, lambda args, ctx: "ok", toolset=toolset)
    return registry


@pytest.fixture
async def make_env(tmp_path):
    services = []

    async def make(*, max_running: int = 10, retention: float = 3600.0, delegation=None, enabled=None,
                   db="journal.db", sweep=60.0) -> Env:
        registry = make_registry()
        hooks = HookRegistry()
        clock = FakeClock()
        model = ScriptedModel({"leaf": child_script, "orchestrator": child_script, "parent": [[{"text": "hi"}]]})
        parent = AgentSession(model=model, tools=registry.resolve(enabled), session_id="parent-1",
                              enabled_toolsets=frozenset(enabled) if enabled else None, clock=clock)
        host = ChildHost(tools=registry, hooks=hooks, delegation=delegation or DelegationSettings(), clock=clock)
        service = AsyncSubagentLifecycle(
            host, SqliteJournal(tmp_path / db),
            settings=LifecycleSettings(max_running=max_running, retention_seconds=retention, sweep_interval_seconds=sweep),
        )
        await service.start()
        services.append(service)
        return Env(service, parent, hooks, clock, model)

    yield make
    for service in services:
        await service.close()


@pytest.fixture
async def env(make_env):
    return await make_env()
