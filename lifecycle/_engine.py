"""Engines run child jobs. The journal decides what is remembered; the engine only
decides when and where a job runs, so a distributed engine can replace this one."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger("lifecycle.engine")

Runner = Callable[[Any], Awaitable[None]]


class Engine(Protocol):
    def bind(self, runner: Runner) -> None:
        """Set the coroutine function that runs one job; called once, before `submit`."""

    def submit(self, job: Any) -> None:
        """Run ``runner(job)`` when a slot is free. Never blocks; the job reports its own outcome."""

    def withdraw(self, job: Any) -> bool:
        """Remove a job that has not started yet; False when it already started."""

    async def close(self) -> None:
        """Stop starting jobs and wait for running ones (callers interrupt them first)."""


class InProcessEngine:
    """Runs jobs as asyncio tasks on this loop, at most ``max_running`` at once; the
    rest wait in FIFO order."""

    def __init__(self, max_running: int) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running = max_running
        self._runner: Runner | None = None
        self._pending: deque[Any] = deque()
        self._tasks: set[asyncio.Task] = set()
        self._closed = False

    @property
    def running(self) -> int:
        return len(self._tasks)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def bind(self, runner: Runner) -> None:
        self._runner = runner

    def submit(self, job: Any) -> None:
        if self._closed:
            raise RuntimeError("the engine is closed")
        if len(self._tasks) < self.max_running:
            self._start(job)
        else:
            self._pending.append(job)

    def withdraw(self, job: Any) -> bool:
        try:
            self._pending.remove(job)
        except ValueError:
            return False
        return True

    def _start(self, job: Any) -> None:
        assert self._runner is not None, "bind() first"
        task = asyncio.ensure_future(self._runner(job))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # Jobs record their own failures; reaching here is a bug worth a loud line.
            log.error("child job crashed", exc_info=task.exception())
        while self._pending and len(self._tasks) < self.max_running and not self._closed:
            self._start(self._pending.popleft())

    async def close(self) -> None:
        self._closed = True
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
