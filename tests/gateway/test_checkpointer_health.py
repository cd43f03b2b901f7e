"""A WAL checkpointer that ended by itself shows in /metrics, not only in the log."""

from __future__ import annotations

import asyncio

from gateway.testing import RecordingAdapter, make_config

GAUGE = "switchboard_wal_checkpointer_up"


def gauge(gateway) -> str:
    return next(line for line in gateway.metrics.exposition().decode().splitlines() if line.startswith(GAUGE))


async def test_a_checkpointer_that_ended_reads_0_until_a_new_one_starts(tmp_path, gateways):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    assert gauge(gateway) == f"{GAUGE} 1.0"
    task = gateway._checkpointer._task
    task.cancel()  # ended other than by its stop (the worst a bug can do: it survives every exception)
    await asyncio.wait([task])
    assert gauge(gateway) == f"{GAUGE} 0.0"
    await gateway._checkpointer.stop()
    gateway._checkpointer.start()
    assert gauge(gateway) == f"{GAUGE} 1.0"
