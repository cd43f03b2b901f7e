"""Is a lifecycle child's cost above a bare task's a matter of memory locality?

A fan-out of N children touches each child's data in several passes over all N
(launch, the child's run, the batched publish, each waiter's ``result()``). At
N = 1,000 that is more than a core's L2 holds between passes; at N = 50 it all
stays in L2. If the gap to bare asyncio tasks were cache misses between passes,
a child would cost clearly less at small N. This prints the per-child cost at
each N (launch -> wait -> result(), memory journal, as `lifecycle_bench` runs it)
against N bare tasks, in alternating rounds, by the thread's CPU time: time the
process spent preempted on a shared machine does not count, and small N is
repeated so that each round times about as many children.

Measured on the 2-CPU box (issue 15), four runs of 15-21 rounds: a child costs no
less at N = 100 than at N = 1,000 (149.4 against 141.8 µs; 180.0 against 177.1 µs
under load), nor at N = 50 (163.8 against 153.3 µs; its figure carries the fan-out's
fixed cost, ~0.45 ms over 50 children), while callgrind's simulated L2 misses per
child fall from ~480 at N = 1,000 to ~33 at N = 50. The gap is the length of each
child's own code path (its L1 instruction and data misses: ~10,400 and ~4,800 per
child, ~4,600 data misses still at N = 50), not locality between passes.

Run: .venv/bin/python bench/lifecycle_locality.py [--sizes 50,1000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.testing import inside_turn  # noqa: E402
from bench.lifecycle_bench import Service  # noqa: E402
from gateway import gc_tuning  # noqa: E402


async def bare(n: int) -> float:
    """CPU seconds per task for ``n`` bare asyncio tasks started at once and gathered."""

    async def child() -> str:
        return "done"

    gc.collect()
    start = time.thread_time()
    await asyncio.gather(*[asyncio.ensure_future(child()) for _ in range(n)])
    return (time.thread_time() - start) / n


async def fan_out(tmp: Path, n: int) -> float:
    """CPU seconds per child for ``n`` children launched at once, each waited for and its result read."""
    async with Service(tmp, "memory", max_running=n) as s:
        with inside_turn(s.parent):
            gc.collect()
            start = time.thread_time()
            await asyncio.gather(*[s.child(f"task {i}") for i in range(n)])
            return (time.thread_time() - start) / n


async def main(sizes: list[int], count: int) -> None:
    gc_tuning.tune_for_serving()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        await fan_out(tmp, max(sizes))  # warm-up: first-use costs are not per child
        floors: dict[int, list[float]] = {n: [] for n in sizes}
        costs: dict[int, list[float]] = {n: [] for n in sizes}
        for i in range(count):
            for n in sizes if i % 2 == 0 else sizes[::-1]:
                repeats = max(1, max(sizes) // n)
                floors[n].append(statistics.median([await bare(n) for _ in range(repeats)]))
                costs[n].append(statistics.median([await fan_out(tmp, n) for _ in range(repeats)]))
    for n in sizes:
        floor, cost = statistics.median(floors[n]), statistics.median(costs[n])
        print(f"  N = {n:>6,}: a child {cost * 1e6:7.1f} µs CPU, a bare task {floor * 1e6:6.2f} µs: "
              f"{cost / floor:5.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,1000", help="children at once, comma-separated (default 50,1000)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    args = parser.parse_args()
    asyncio.run(main([int(n) for n in args.sizes.split(",")], max(3, args.rounds)))
