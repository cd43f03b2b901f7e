"""delegate_task timings (issue: delegate_task).

Prints:
- a batch of 10 children that each sleep 1 s in a tool: wall time (target ≤ 1.05 s);
- a batch of 10 instantly answering children: the whole call's time beyond the
  children's own work (target ≤ 5 ms), median of 20 calls;
- 100 sequential single-task calls: time per call and memory, first vs last
  quarter (target: no growth).

Run: .venv/bin/python bench/delegate_bench.py
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent import AgentSession, HookRegistry, ModelRequest, ModelResponse, ToolCall, ToolContext, ToolRegistry  # noqa: E402
from agent.testing.turns import inside_turn  # noqa: E402
from bench.machine import describe  # noqa: E402
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool  # noqa: E402
from lifecycle.settings import LifecycleSettings  # noqa: E402


class ChildModel:
    """Answers at once; a goal starting with 'sleep' first calls the sleep tool."""

    name = "bench"
    context_window = 128_000
    supports_vision = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.metadata.get("goal", "").startswith("sleep") and request.iteration == 0:
            return ModelResponse(text=None, tool_calls=(ToolCall("c1", "sleep_tool", "{}"),))
        return ModelResponse(text="done")


async def sleep_tool(args, ctx):
    await asyncio.sleep(1.0)
    return "slept"


async def setup(tmp: Path):
    registry = ToolRegistry()
    registry.add("sleep_tool", "sleeps 1 s", {"type": "object"}, sleep_tool, toolset="bench")
    service = AsyncSubagentLifecycle(ChildHost(tools=registry, hooks=HookRegistry()),
                                     SqliteJournal(tmp / "bench.db"), settings=LifecycleSettings(max_running=20))
    tool = delegate_tool(service)
    registry.register(tool)
    await service.start()
    parent = AgentSession(model=ChildModel(), tools=registry.resolve(), session_id="bench-parent", workspace=tmp)
    return service, parent, tool


async def call(tool, parent, args) -> float:
    with inside_turn(parent):
        start = time.perf_counter()
        await tool.invoke(args, ToolContext(parent, "c", parent.workspace, {}))
        return time.perf_counter() - start


async def own_work(n: int) -> float:
    """One instantly answering child's own turn, timed alone."""
    model = ChildModel()
    start = time.perf_counter()
    for i in range(n):
        await AgentSession(model=model, role="leaf", metadata={"goal": "x"}).run_turn("x")
    return (time.perf_counter() - start) / n


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        service, parent, tool = await setup(Path(d))
        sleepy = await call(tool, parent, {"tasks": [{"goal": f"sleep {i}"} for i in range(10)]})
        instant_tasks = {"tasks": [{"goal": f"instant {i}"} for i in range(10)]}
        await call(tool, parent, instant_tasks)  # warm-up
        batches = [await call(tool, parent, instant_tasks) for _ in range(20)]
        work = await own_work(200)
        times = [await call(tool, parent, {"goal": f"single {i}"}) for i in range(100)]
        gc.collect()
        tracemalloc.start()  # a second round for memory: tracing would slow the timed one
        memory = []
        for i in range(100):
            await call(tool, parent, {"goal": f"traced {i}"})
            memory.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
        await service.close()
    batch = statistics.median(batches)
    beyond = batch - 10 * work
    q = 25
    print(f"delegate_task benchmark on {describe()} (in-process engine, SQLite journal)")
    print(f"  10 children sleeping 1 s in a tool:  {sleepy:.3f} s      target ≤ 1.05 s")
    print(f"  batch of 10 instant children:        {batch * 1e3:.2f} ms median; beyond the children's own work "
          f"({work * 1e6:.0f} µs each): {beyond * 1e3:.2f} ms   target ≤ 5 ms")
    print(f"  100 sequential single-task calls:    {statistics.median(times[:q]) * 1e3:.2f} ms first quarter, "
          f"{statistics.median(times[-q:]) * 1e3:.2f} ms last quarter (median per call)")
    print(f"                                       memory {memory[q - 1] / 1024:.0f} KB after {q}, "
          f"{memory[-1] / 1024:.0f} KB after 100 (growth {(memory[-1] - memory[q - 1]) / 1024 / (100 - q):.2f} KB/call)")


if __name__ == "__main__":
    asyncio.run(main())
