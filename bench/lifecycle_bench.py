"""Lifecycle overhead with an instantly answering scripted model (issue: lifecycle API).

Prints, for N children on the in-process engine with the SQLite journal:
- overhead per child (launch -> terminal result readable, minus the child's own
  turn), median, one child at a time;
- children launched and completed per second, N at once;
- launch latency p50/p95 while the others run;
- memory per child held inside its model call (tracemalloc);
and the same figures for N bare asyncio tasks, as ratios to that floor.

Run: .venv/bin/python bench/lifecycle_bench.py [N]
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

from agent import AgentSession, HookRegistry, ModelRequest, ModelResponse, ToolRegistry  # noqa: E402
from agent.testing import inside_turn  # noqa: E402
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, SubagentLaunchRequest  # noqa: E402
from lifecycle.settings import LifecycleSettings  # noqa: E402

INSTANT = ModelResponse(text="done")


class InstantModel:
    """Answers at once; or, when ``gate`` is set, holds every call until it opens."""

    name = "instant"
    context_window = 128_000
    supports_vision = False

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.gate is not None:
            await self.gate.wait()
        return INSTANT


async def make_service(tmp: Path, max_running: int) -> tuple[AsyncSubagentLifecycle, AgentSession, InstantModel]:
    model = InstantModel()
    registry = ToolRegistry()
    service = AsyncSubagentLifecycle(
        ChildHost(tools=registry, hooks=HookRegistry()),
        SqliteJournal(tmp / f"bench-{time.monotonic_ns()}.db"),
        settings=LifecycleSettings(max_running=max_running),
    )
    await service.start()
    parent = AgentSession(model=model, tools={}, session_id="bench-parent")
    return service, parent, model


async def overhead_per_child(tmp: Path, n: int) -> float:
    service, parent, _ = await make_service(tmp, max_running=10)
    samples = []
    with inside_turn(parent):
        for i in range(n):
            start = time.perf_counter()
            handle = await service.launch(SubagentLaunchRequest(goal=f"task {i}"))
            await service.wait(handle)
            result = await service.result(handle)
            samples.append(time.perf_counter() - start - result.duration_seconds)
    await service.close()
    return statistics.median(samples)


async def throughput(tmp: Path, n: int) -> tuple[float, list[float]]:
    service, parent, _ = await make_service(tmp, max_running=n)
    launch_times: list[float] = []

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        handle = await service.launch(SubagentLaunchRequest(goal=f"task {i}"))
        launch_times.append(time.perf_counter() - t0)
        await service.wait(handle)

    with inside_turn(parent):
        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        elapsed = time.perf_counter() - start
    await service.close()
    return n / elapsed, launch_times


async def memory_per_waiting_child(tmp: Path, n: int) -> float:
    service, parent, model = await make_service(tmp, max_running=n)
    model.gate = asyncio.Event()
    with inside_turn(parent):
        warm = await service.launch(SubagentLaunchRequest(goal="warm-up"))
        model.gate.set()
        await service.wait(warm)
        model.gate = asyncio.Event()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        handles = [await service.launch(SubagentLaunchRequest(goal=f"waiting {i}")) for i in range(n)]
        while service.engine.running < n or any(r.state.value != "RUNNING" for r in service._records.values()
                                                  if r.handle in handles):
            await asyncio.sleep(0.01)
        await service.journal.sync()
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        model.gate.set()
        for handle in handles:
            await service.wait(handle)
    await service.close()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / n


async def bare_tasks(n: int) -> tuple[float, float, float]:
    async def child(gate: asyncio.Event | None) -> str:
        if gate is not None:
            await gate.wait()
        return "done"

    start = time.perf_counter()
    await asyncio.gather(*(asyncio.ensure_future(child(None)) for _ in range(n)))
    rate = n / (time.perf_counter() - start)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await asyncio.ensure_future(child(None))
        samples.append(time.perf_counter() - t0)
    gate = asyncio.Event()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    tasks = [asyncio.ensure_future(child(gate)) for _ in range(n)]
    await asyncio.sleep(0)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    gate.set()
    await asyncio.gather(*tasks)
    memory = sum(stat.size_diff for stat in after.compare_to(before, "filename")) / n
    return rate, statistics.median(samples), memory


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        floor_rate, floor_latency, floor_memory = await bare_tasks(n)
        overhead = await overhead_per_child(tmp, n)
        rate, launches = await throughput(tmp, n)
        memory = await memory_per_waiting_child(tmp, n)
    print(f"lifecycle benchmark, N = {n} children, scripted instant model, SQLite journal (WAL)")
    print(f"  overhead per child (median):   {overhead * 1e6:8.0f} µs   target ≤ 200 µs   "
          f"bare task {floor_latency * 1e6:.1f} µs  (ratio {overhead / floor_latency:.0f}x)")
    print(f"  launched+completed per second: {rate:8.0f}      target ≥ 5000     "
          f"bare tasks {floor_rate:.0f}/s  (ratio {floor_rate / rate:.1f}x slower)")
    print(f"  launch latency while running:  p50 {pct(launches, 0.5) * 1e3:.2f} ms, p95 {pct(launches, 0.95) * 1e3:.2f} ms"
          f"   target p95 ≤ 2 ms")
    print(f"  memory per waiting child:      {memory / 1024:8.1f} KB   target ≤ 12 KB   "
          f"bare task {floor_memory / 1024:.2f} KB  (ratio {memory / floor_memory:.1f}x)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
