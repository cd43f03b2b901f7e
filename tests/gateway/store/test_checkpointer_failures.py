"""A checkpointer that fails does not leave the WAL to grow until the disk is full."""

from __future__ import annotations

import asyncio
import logging

from gateway.store import GatewayStore, SessionRow
from gateway.store import checkpointer as checkpoints
from tests.polling import until


async def test_checkpoints_go_on_after_failures_nobody_foresaw(tmp_path, monkeypatch, caplog):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.db.automatic_checkpoints(False)
    copied = []
    real_checkpoint, real_connect = checkpoints.checkpoint, checkpoints._connect
    connects = []

    def connect_failing_once(p):
        connects.append(p)
        if len(connects) == 1:
            raise OSError("no file handles left")
        return real_connect(p)

    def checkpoint_failing_thrice(conn):
        if len(copied) < 3:
            copied.append(0)
            raise RuntimeError("a bug in our own checkpoint")
        result = real_checkpoint(conn)
        copied.append(result[2])
        return result

    monkeypatch.setattr(checkpoints, "_connect", connect_failing_once)
    monkeypatch.setattr(checkpoints, "checkpoint", checkpoint_failing_thrice)
    caplog.set_level(logging.INFO, logger="gateway.store")
    task = asyncio.ensure_future(checkpoints.run_forever(path, interval=0.01))
    try:
        for i in range(300):  # over 1,000 pages of log, which only the task checkpoints
            store.sessions.save(SessionRow(f"k{i}", f"s{i}", 1, "inline", [{"role": "user", "content": "x" * 2000}]))
            await store.durable()
        await until(lambda: sum(copied) >= 1000)  # a worker thread's count: no event to wait for
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.wait([task])
        store.db.automatic_checkpoints(True)
        store.close()
    assert task.cancelled()
    # A fresh connection after each failure: one that failed may be what fails.
    assert len(connects) >= 4
    unexpected = [r for r in caplog.records if "unexpectedly" in r.getMessage()]
    assert len(unexpected) == 1 and unexpected[0].exc_info is not None
    assert any(r.getMessage() == "WAL checkpoints resumed" for r in caplog.records)


async def test_backoff_doubles_to_a_minute_and_resets_after_a_success(monkeypatch):
    sleeps = []
    outcomes = iter([RuntimeError("x")] * 8 + [None, RuntimeError("y")])

    async def recording_sleep(delay):
        sleeps.append(delay)
        if len(sleeps) > 10:
            raise asyncio.CancelledError

    def scripted_checkpoint(conn):
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome
        return (0, 0, 0)

    monkeypatch.setattr(checkpoints, "checkpoint", scripted_checkpoint)
    monkeypatch.setattr(checkpoints, "_connect", lambda path: _Closable())
    try:
        await checkpoints.run_forever("unused.db", interval=1.0, sleep=recording_sleep)
    except asyncio.CancelledError:
        pass
    assert sleeps == [1, 2, 4, 8, 16, 32, 60, 60, 60, 1, 2]


class _Closable:
    def close(self) -> None:
        pass


async def test_a_checkpointer_task_that_ends_hands_checkpoints_back_to_sqlite(tmp_path, monkeypatch, caplog):
    async def dying(path, interval):
        raise RuntimeError("the checkpointer died")

    monkeypatch.setattr(checkpoints, "run_forever", dying)
    store = GatewayStore(tmp_path / "state.db")
    checkpointer = checkpoints.Checkpointer(store.db)
    try:
        checkpointer.start()
        assert store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 0
        await until(lambda: store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 1000)
        assert not checkpointer.running
        assert any("checkpointer ended" in r.getMessage() for r in caplog.records)
        await checkpointer.stop()
        assert store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 1000
    finally:
        store.close()


async def test_a_stopped_checkpointer_hands_checkpoints_back_once_and_quietly(tmp_path, caplog):
    store = GatewayStore(tmp_path / "state.db")
    checkpointer = checkpoints.Checkpointer(store.db, interval=0.01)
    try:
        checkpointer.start()
        await checkpointer.stop()
        await asyncio.sleep(0)  # the task's done callbacks
        assert store.db.read_one("PRAGMA wal_autocheckpoint")[0] == 1000
        assert not any("checkpointer ended" in r.getMessage() for r in caplog.records)
    finally:
        store.close()
