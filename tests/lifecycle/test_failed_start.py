"""A start that fails leaves nothing open: what it opened (the journal's database, the engine, a
sweeper) is closed before it raises, the service is closed for good, and a `close` after it returns
at once, as often as it is called."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from agent import HookRegistry, ToolRegistry
from lifecycle import AsyncSubagentLifecycle, ChildHost, InProcessEngine, SqliteJournal, SubagentLifecycleError


def _sweepers() -> set[asyncio.Task]:
    return {t for t in asyncio.all_tasks() if t.get_name() == "lifecycle-sweeper" and not t.cancelling()}


def _service(journal, engine=None) -> AsyncSubagentLifecycle:
    return AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), journal, engine=engine)


class _CountingEngine(InProcessEngine):
    def __init__(self, *args, fail_start: bool = False) -> None:
        super().__init__(*args)
        self.fail_start, self.closes = fail_start, 0

    async def start(self, host, unfinished):
        if self.fail_start:
            raise RuntimeError("the engine could not start")
        return await super().start(host, unfinished)

    async def close(self, *, grace=None) -> None:
        self.closes += 1
        await super().close(grace=grace)


async def _corrupt_key_table(path) -> None:
    journal = SqliteJournal(path)
    await journal.open()
    await journal.save_key("k1", b"too short", 0.0, None)  # a secret no key ring accepts
    await journal.close()


async def test_a_start_that_fails_reading_its_keys_closes_its_journal(tmp_path):
    # The close that followed returned at once, as for a service never started: the journal's database
    # connection was left open (its file held, a later open of another service racing it).
    path = tmp_path / "journal.db"
    await _corrupt_key_table(path)
    journal, engine, sweepers = SqliteJournal(path), _CountingEngine(2), _sweepers()
    service = _service(journal, engine)
    with pytest.raises(ValueError, match="no usable secret"):
        await service.start()
    assert journal._state == "closed" and journal._db.closed
    assert engine.closes == 0 and _sweepers() == sweepers  # it never got that far
    await service.close()  # idempotent, and quiet: nothing left to close
    await service.close()
    assert journal._db.closed
    with pytest.raises(SubagentLifecycleError) as again:  # closed for good, as after a close
        await service.start()
    assert again.value.code == "CLOSED"
    sqlite3.connect(path).execute("BEGIN EXCLUSIVE").connection.rollback()  # nothing holds the file


async def test_a_start_whose_engine_fails_closes_the_engine_and_the_journal(tmp_path):
    journal, engine, sweepers = SqliteJournal(tmp_path / "journal.db"), _CountingEngine(2, fail_start=True), _sweepers()
    service = _service(journal, engine)
    with pytest.raises(RuntimeError, match="could not start"):
        await service.start()
    assert (engine.closes, journal._state, journal._db.closed) == (1, "closed", True)
    assert _sweepers() == sweepers
    await service.close()
    assert engine.closes == 1  # not closed twice


async def test_a_close_during_a_start_that_fails_closes_what_it_opened_once(tmp_path):
    path = tmp_path / "journal.db"
    await _corrupt_key_table(path)
    opened = asyncio.Event()

    class _SlowKeys(SqliteJournal):
        async def load_keys(self):
            opened.set()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            return await super().load_keys()

    journal = _SlowKeys(path)
    service = _service(journal)
    starting = asyncio.ensure_future(service.start())
    await opened.wait()
    closing = asyncio.ensure_future(service.close())
    with pytest.raises(ValueError, match="no usable secret"):  # its own error, which says more than CLOSED
        await starting
    await asyncio.wait_for(closing, 5)
    assert journal._state == "closed" and journal._db.closed
