"""Garbage-collector settings for a long-running gateway process.

Every turn allocates thousands of short-lived objects (coroutines, futures, tasks,
dicts) that reference counting frees at once. With CPython's default gen-0
threshold of 700 live young objects, the collector ran every twenty-odd turns
and each run scanned everything then in flight: 75-100 µs per turn, about 7 %
of the gateway's CPU (``bench/gateway_bench.py``). A threshold of 50,000 lets
nearly all of them die young unscanned; reference cycles are still collected,
a little later. It was 10,000 until a lifecycle fan-out of 1,000 children at once
(``bench/lifecycle_bench.py``), some 24,000 young objects at its peak, was found to
pay for two collections, 1.2-1.6 µs per child (3-4 % of its cost); at 50,000 it pays
for none. The gateway collects less often too: in 40,000 webhook turns once (a 4.6 ms
pause, 0.12 µs per turn), where 10,000 collected four times in 12,000 turns (pauses
of 2-4 ms, 0.9 µs per turn); ``bench/delegate_bench.py`` collects at neither.
`gc.freeze` moves what start-up built (modules, config, the store) into a permanent
generation that full collections no longer walk.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000


def tune_for_serving() -> None:
    """Apply once the process has started: collect start-up garbage, freeze the rest,
    and raise the young-generation threshold (the older ones keep their defaults)."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
