"""WAL checkpoints run on a worker thread, never inside a commit on the event loop."""

from __future__ import annotations

import asyncio

from gateway.store import GatewayStore, SessionRow
from gateway.store import checkpointer as checkpoints
from gateway.testing import make_config, start_gateway
from tests.polling import until


async def test_the_log_is_checkpointed_off_the_loop_while_the_store_checkpoints_nothing(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.db.automatic_checkpoints(False)
    copied = []
    real = checkpoints.checkpoint

    def recording(conn):
        result = real(conn)
        copied.append(result[2])
        return result

    monkeypatch.setattr(checkpoints, "checkpoint", recording)
    task = asyncio.ensure_future(checkpoints.run_forever(path, interval=0.01))
    try:
        for i in range(300):  # over 1,000 pages of log: SQLite alone would have checkpointed in a commit
            store.sessions.save(SessionRow(f"k{i}", f"s{i}", 1, "inline", [{"role": "user", "content": "x" * 2000}]))
            await store.durable()
        assert store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 0
        await until(lambda: sum(copied) >= 1000)  # a worker thread's count: no event to wait for
    finally:
        task.cancel()
        await asyncio.wait([task])
        store.db.automatic_checkpoints(True)
        store.close()


async def test_the_gateway_hands_checkpoints_to_the_worker_while_it_runs(tmp_path):
    gateway = await start_gateway(make_config(tmp_path), [])
    try:
        assert gateway.store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 0
        assert gateway._checkpointer.running
    finally:
        await gateway.stop(grace=0)
    assert not gateway._checkpointer.running
