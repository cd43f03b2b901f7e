"""Another process's read transaction (an `sqlite3` shell left after BEGIN, a backup, a database browser) holds
the WAL checkpoints back and the log grows: the checkpointer says so once, names the cause, and says when it ends."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3

from gateway.store import GatewayStore, SessionRow
from gateway.store import checkpointer as checkpoints


class Ticks:
    """A fake `sleep` for `run_forever`: each `tick` lets exactly one checkpoint run and be handled."""

    def __init__(self) -> None:
        self.go: asyncio.Queue[None] = asyncio.Queue()
        self.asleep: asyncio.Queue[float] = asyncio.Queue()

    async def sleep(self, delay: float) -> None:
        self.asleep.put_nowait(delay)
        await self.go.get()

    async def tick(self) -> None:
        self.go.put_nowait(None)
        await self.asleep.get()


async def turns(store: GatewayStore, ticks: Ticks, count: int) -> None:
    """``count`` checkpoints a minute apart, with writes between them."""
    for i in range(count):
        store.sessions.save(SessionRow(f"k{i}", f"s{i}", 1, "inline", [{"role": "user", "content": "x" * 2000}]))
        await store.durable()
        await ticks.tick()


async def test_a_read_transaction_holding_checkpoints_back_is_logged_once_and_its_end_too(tmp_path, caplog):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.db.automatic_checkpoints(False)
    reader = sqlite3.connect(path, isolation_level=None)
    ticks = Ticks()
    caplog.set_level(logging.INFO, logger="gateway.store")
    task = asyncio.ensure_future(checkpoints.run_forever(path, interval=60.0, sleep=ticks.sleep))
    try:
        await ticks.asleep.get()
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        wal_before = os.stat(f"{path}-wal").st_size
        await turns(store, ticks, 4)  # 240 s: a reader that checkpoints on its own schedule may hold them so long
        assert [r for r in caplog.records if r.name == "gateway.store"] == []
        await turns(store, ticks, 6)
        assert os.stat(f"{path}-wal").st_size > wal_before  # nothing copied back: the log only grows
        reader.execute("COMMIT")
        await turns(store, ticks, 3)
    finally:
        task.cancel()
        await asyncio.wait([task])
        reader.close()
        store.db.automatic_checkpoints(True)
        store.close()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "gateway.store"]
    assert len(said) == 2, said
    assert said[0][0] == "WARNING"
    assert said[0][1].startswith("WAL checkpoints have been held back for 300 s: another process has a read"
                                 f" transaction open on {path} ")
    assert "end that transaction (COMMIT, or close the program)" in said[0][1]
    assert said[1] == ("INFO", "WAL checkpoints caught up after 600 s held back")


async def test_checkpoints_held_back_for_less_than_five_minutes_say_nothing(tmp_path, caplog):
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.db.automatic_checkpoints(False)
    reader = sqlite3.connect(path, isolation_level=None)
    ticks = Ticks()
    caplog.set_level(logging.INFO, logger="gateway.store")
    task = asyncio.ensure_future(checkpoints.run_forever(path, interval=60.0, sleep=ticks.sleep))
    try:
        await ticks.asleep.get()
        for _ in range(3):  # litestream's way: a read transaction of some minutes, then a checkpoint of its own
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
            await turns(store, ticks, 4)
            reader.execute("COMMIT")
            await turns(store, ticks, 1)
    finally:
        task.cancel()
        await asyncio.wait([task])
        reader.close()
        store.db.automatic_checkpoints(True)
        store.close()
    assert [r.getMessage() for r in caplog.records if r.name == "gateway.store"] == []


async def test_a_checkpoint_another_connection_was_running_neither_ends_nor_counts_the_hold(tmp_path, caplog,
                                                                                           monkeypatch):
    # SQLite answers (1, -1, -1) while another connection checkpoints (litestream): taken for "not behind", it
    # ended the count and said "caught up" of a log still held back.
    answers = iter([(0, 10, 5)] * 4 + [(1, -1, -1)] + [(0, 20, 5)] * 2)
    monkeypatch.setattr(checkpoints, "_checkpoint_held", lambda held, path: next(answers))
    ticks = Ticks()
    caplog.set_level(logging.INFO, logger="gateway.store")
    task = asyncio.ensure_future(checkpoints.run_forever(tmp_path / "state.db", interval=60.0, sleep=ticks.sleep))
    try:
        await ticks.asleep.get()
        for _ in range(7):
            await ticks.tick()
    finally:
        task.cancel()
        await asyncio.wait([task])
    [line] = [r.getMessage() for r in caplog.records if r.name == "gateway.store"]
    assert line.startswith("WAL checkpoints have been held back for 300 s"), line
