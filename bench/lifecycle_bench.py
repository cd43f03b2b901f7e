"""Lifecycle speed against the targets of issue 15, as ratios to bare asyncio tasks.

Every figure is a plugin's documented path: ``launch``, then ``wait``, then
``result()``, from inside an agent turn, with a scripted model that answers at
once, on the in-process engine. Each round times N bare asyncio tasks right
before and right after the lifecycle run and takes their mean as the floor, so
both see the same machine (a shared 2-core box drifts by 2x within a minute, and
a floor from one side alone follows a burst of load on that side); ratios are
taken per round and the median of the rounds is reported; every timed run starts after a full garbage collection, so
none pays for an earlier one's garbage. Everything runs as `switchboard run` runs it: the garbage
collector tuned (`gateway.gc_tuning`), and the SQLite journal's commits not
checkpointing the WAL themselves while a worker thread does (`gateway.store.checkpointer`).

Figures (target in brackets):
- per child, N at once, SQLite journal: launch -> wait -> result() (≤ 20x a bare
  task; stretch 12x); the same on the memory journal (≤ 10x);
- fixed cost of one fan-out (≤ 0.5 ms): bounded by a whole fan-out of one
  child, also printed less one child's cost;
- with ``--n`` other than 1,000: the per-child cost at N against the one at
  1,000, in alternating rounds (≤ 1.2x);
- memory per child waiting in its model call, at 1,000 and at N (≤ 8 KB);
- latency of single launches while 1,000 children run (p95 ≤ 1 ms).

Run: .venv/bin/python bench/lifecycle_bench.py [--n 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent import AgentSession, HookRegistry, ModelRequest, ModelResponse, ToolRegistry  # noqa: E402
from agent.testing import inside_turn  # noqa: E402
from bench.machine import describe  # noqa: E402
from gateway import gc_tuning  # noqa: E402
from gateway.store import checkpointer as checkpoints  # noqa: E402
from lifecycle import (  # noqa: E402
    AsyncSubagentLifecycle,
    ChildHost,
    MemoryJournal,
    SqliteJournal,
    SubagentLaunchRequest,
)
from lifecycle.settings import LifecycleSettings  # noqa: E402

INSTANT = ModelResponse(text="done")
BASE = 1_000


class BenchModel:
    """Answers at once, except goals starting with "park", which wait for ``gate``."""

    name = "instant"
    context_window = 128_000
    supports_vision = False

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.parked = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.metadata["goal"].startswith("park"):
            self.parked += 1
            await self.gate.wait()
        return INSTANT


class Service:
    """One lifecycle service with its parent session; a fresh one per measurement."""

    def __init__(self, tmp: Path, journal: str, max_running: int) -> None:
        self.model = BenchModel()
        self.journal = SqliteJournal(tmp / f"bench-{time.monotonic_ns()}.db") if journal == "sqlite" else MemoryJournal()
        self.lifecycle = AsyncSubagentLifecycle(
            ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), self.journal,
            settings=LifecycleSettings(max_running=max_running),
        )
        self.parent = AgentSession(model=self.model, tools={}, session_id="bench-parent")
        self._checkpoints: asyncio.Task | None = None

    async def __aenter__(self) -> Service:
        await self.lifecycle.start()
        if isinstance(self.journal, SqliteJournal):
            self.journal.db.automatic_checkpoints(False)
            self._checkpoints = asyncio.create_task(checkpoints.run_forever(self.journal.db.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.lifecycle.close()
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            await asyncio.gather(self._checkpoints, return_exceptions=True)

    async def child(self, goal: str) -> None:
        service = self.lifecycle
        handle = await service.launch(SubagentLaunchRequest(goal=goal))
        await service.wait(handle)
        result = await service.result(handle)
        assert result.ready, result


async def bare_tasks(n: int) -> float:
    """Seconds per task for ``n`` bare asyncio tasks started at once and gathered."""

    async def child() -> str:
        return "done"

    gc.collect()  # every timed run starts clean: none pays for an earlier one's garbage
    start = time.perf_counter()
    # Made as the fan-out makes its own tasks, by gather from coroutines: `ensure_future` on each would ask
    # for the running loop every time (a getpid() system call on 3.11), 12 % on the floor, flattering every ratio.
    await asyncio.gather(*[child() for _ in range(n)])
    return (time.perf_counter() - start) / n


async def fan_out(tmp: Path, journal: str, n: int) -> float:
    """Seconds per child for ``n`` children launched at once, each waited for and its result read."""
    async with Service(tmp, journal, max_running=n) as s:
        with inside_turn(s.parent):
            gc.collect()
            start = time.perf_counter()
            await asyncio.gather(*[s.child(f"task {i}") for i in range(n)])
            return (time.perf_counter() - start) / n


async def rounds(tmp: Path, journal: str, n: int, count: int) -> tuple[float, float]:
    """(median seconds per child, median ratio to a bare task) over ``count`` rounds."""
    await fan_out(tmp, journal, n)  # warm-up: first-use costs are not per child
    costs, ratios = [], []
    for _ in range(count):
        before = await bare_tasks(n)
        cost = await fan_out(tmp, journal, n)
        floor = (before + await bare_tasks(n)) / 2
        costs.append(cost)
        ratios.append(cost / floor)
    return statistics.median(costs), statistics.median(ratios)


async def scaling(tmp: Path, n: int, count: int) -> tuple[float, float, float]:
    """Per-child cost at ``n`` against the one at `BASE`, in alternating rounds so that both
    see the same machine: (median of the per-round quotients, median seconds per child at
    ``n``, its median ratio to a bare task)."""
    await fan_out(tmp, "sqlite", n)
    quotients, costs, ratios = [], [], []
    for _ in range(count):
        base = await fan_out(tmp, "sqlite", BASE)
        before = await bare_tasks(n)
        cost = await fan_out(tmp, "sqlite", n)
        floor = (before + await bare_tasks(n)) / 2
        quotients.append(cost / base)
        costs.append(cost)
        ratios.append(cost / floor)
    return statistics.median(quotients), statistics.median(costs), statistics.median(ratios)


async def one_child_fan_out(tmp: Path, samples: int = 300) -> float:
    """Seconds from a launch to its result for a fan-out of one child (launch -> wait ->
    result, SQLite journal); median. The fixed cost of a fan-out is this minus one child's
    own cost, so this bounds it from above."""
    async with Service(tmp, "sqlite", max_running=10) as s:
        with inside_turn(s.parent):
            times = []
            for i in range(samples):
                start = time.perf_counter()
                await s.child(f"single {i}")
                times.append(time.perf_counter() - start)
    return statistics.median(times)


async def parked(tmp: Path, n: int, during: Callable[[Service], Awaitable[list[float]]] | None = None):
    """Run ``during(service)`` while ``n`` children wait inside their model call; without
    ``during``, return the bytes each waiting child holds (tracemalloc, after full collections)."""
    async with Service(tmp, "sqlite", max_running=n + 1000) as s:
        with inside_turn(s.parent):
            await s.child("warm-up")
            if during is None:
                gc.collect()
                tracemalloc.start()
                before = tracemalloc.get_traced_memory()[0]
            children = asyncio.gather(*[s.child(f"park {i}") for i in range(n)])
            try:
                while s.model.parked < n:
                    await asyncio.sleep(0.005)
                if during is not None:
                    return await during(s)
                gc.collect()
                return (tracemalloc.get_traced_memory()[0] - before) / n
            finally:
                if during is None:
                    tracemalloc.stop()
                s.model.gate.set()
                await children


async def launch_latencies(tmp: Path, running: int = BASE, probes: int = 300) -> list[float]:
    """Seconds per `launch` call, one after another, while ``running`` children run."""

    async def probe(s: Service) -> list[float]:
        times, tasks = [], []
        for i in range(probes):
            start = time.perf_counter()
            handle = await s.lifecycle.launch(SubagentLaunchRequest(goal=f"probe {i}"))
            times.append(time.perf_counter() - start)
            tasks.append(s.lifecycle.wait(handle))
        await asyncio.gather(*tasks)
        return times

    return await parked(tmp, running, probe)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(label: str, value: str, target: str, verdict: bool) -> None:
    print(f"  {label:<44} {value:>22}   target {target:<22} {'ok' if verdict else 'MISSED'}")


async def main(n: int, count: int) -> None:
    started = time.perf_counter()
    gc_tuning.tune_for_serving()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        floor = statistics.median([await bare_tasks(BASE) for _ in range(count)])
        base_cost, base_ratio = await rounds(tmp, "sqlite", BASE, count)
        _, memory_ratio = await rounds(tmp, "memory", BASE, count)
        single = await one_child_fan_out(tmp)
        launches = await launch_latencies(tmp)
        memory = {BASE: await parked(tmp, BASE)}
        if n != BASE:
            scale, big_cost, big_ratio = await scaling(tmp, n, count)
            memory[n] = await parked(tmp, n)
    print(f"lifecycle benchmark on {describe()}: launch -> wait -> result() per child, instant scripted model, "
          f"in-process engine; median of {count} rounds; a bare asyncio task here: {floor * 1e6:.1f} µs")
    line(f"per child, N = {BASE:,}, SQLite journal", f"{base_cost * 1e6:.1f} µs = {base_ratio:.1f}x bare",
         "≤ 20x (stretch 12x)", base_ratio <= 20)
    line(f"per child, N = {BASE:,}, memory journal", f"{memory_ratio:.1f}x bare", "≤ 10x", memory_ratio <= 10)
    line("fixed cost of one fan-out", f"≤ {single * 1e3:.3f} ms", "≤ 0.5 ms", single <= 0.0005)
    print(f"    (a whole one-child fan-out; less one child's cost at N = {BASE:,}: "
          f"{max(0.0, single - base_cost) * 1e3:.3f} ms)")
    if n != BASE:
        line(f"per child, N = {n:,}, SQLite journal", f"{big_cost * 1e6:.1f} µs = {big_ratio:.1f}x bare", "-", True)
        line(f"per child at N = {n:,} / at N = {BASE:,}", f"{scale:.2f}x", "≤ 1.2x", scale <= 1.2)
    for size, per_child in memory.items():
        line(f"memory per waiting child, N = {size:,}", f"{per_child / 1024:.2f} KB", "≤ 8 KB", per_child <= 8192)
    p50, p95 = pct(launches, 0.5), pct(launches, 0.95)
    line(f"launch while {BASE:,} children run", f"p50 {p50 * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms",
         "p95 ≤ 1 ms", p95 <= 0.001)
    print(f"  (benchmark ran {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=BASE, help="children at once for the scaling figure (default 1000)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per figure (at least 5)")
    args = parser.parse_args()
    asyncio.run(main(args.n, max(5, args.rounds)))
