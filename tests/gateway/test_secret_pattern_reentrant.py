"""A line logged by a finalizer that a garbage collection runs while the secrets' pattern is being built (or a
secret registered) is written, masked, and the logging thread goes on: the build's lock is taken again in that
thread, which held it."""

from __future__ import annotations

import asyncio
import gc
import io
import threading

import pytest

import gateway.logging as log
from gateway.logging import MASK, logging_installed, redact, register_secret


@pytest.fixture
def own_registry(monkeypatch) -> None:
    """The registry empty and a lock of its own: one held for good by a thread stuck here stops no later test."""
    monkeypatch.setattr(log, "_secrets", set())
    monkeypatch.setattr(log, "_longest", 0)
    monkeypatch.setattr(log, "_secrets_re", None)
    reentrant = isinstance(log._lock, type(threading.RLock()))
    monkeypatch.setattr(log, "_lock", threading.RLock() if reentrant else threading.Lock())


def pending_task_garbage() -> None:
    """A task left pending on a future no one completes, reachable only from its own cycle: collected, it logs
    "Task was destroyed but it is pending!" through the ``asyncio`` logger."""
    loop = asyncio.new_event_loop()

    async def waits() -> None:
        await loop.create_future()

    loop.create_task(waits())
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()


def in_a_thread(work) -> list[str]:
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(10)
    return done


@pytest.mark.parametrize("collected_in", ["_alternatives", "_longest_spelling"])
def test_a_collection_inside_the_locked_part_that_logs_does_not_hang(own_registry, monkeypatch, collected_in):
    inner = getattr(log, collected_in)

    def collecting(*args):
        gc.collect()  # what an automatic collection does, at an allocation here
        return inner(*args)

    stream = io.StringIO()
    gc.disable()  # no automatic collection before the one above
    try:
        with logging_installed("INFO", "text", stream):
            register_secret("first-secret-5c1")
            pending_task_garbage()
            monkeypatch.setattr(log, collected_in, collecting)
            done = in_a_thread(lambda: (register_secret("later-secret-9d2"),
                                        redact("a first-secret-5c1 and later-secret-9d2"))[1])
    finally:
        gc.enable()
    assert done == [f"a {MASK} and {MASK}"]
    assert "Task was destroyed but it is pending!" in stream.getvalue()
