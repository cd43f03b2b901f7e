"""`PluginThreads`: worker threads for plugins' plain functions, which a stopping process does not wait for.

Python joins every `concurrent.futures` worker thread at interpreter exit, and `asyncio.run`
joins the loop's default executor: one plugin call that never returns (a dead service, no
timeout) would keep a stopped gateway alive until systemd's stop timeout killed it. These are
daemon threads nobody joins, so the process ends when its work is done.

Why leaving such a call behind is safe: the threads run plugin code only — hooks, which observe
and never gate, and plain command handlers, whose answer is not sent once the gateway has
stopped (the command's event is handled again after the next start). The gateway's own state is
written on the event loop's thread alone, and is committed and closed before the process exits;
what the plugin call had not finished of its own (a file, a request) is lost as it would be
under the SIGKILL that ended the process before. `close` names what is still running, for the log.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger("agent.plugins")

T = TypeVar("T")
_Work = tuple[Future[Any], str, Callable[[], Any]]


class PluginThreads:
    """Up to ``max_workers`` daemon threads, started as calls need them, each running one call at a time."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max, self._name = max_workers, name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._running: dict[int, str] = {}
        self._ids = itertools.count()
        self._closed = False

    def submit(self, label: str, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn()`` in one of the threads (queued while all are busy); ``label`` says whose
        call it is (``plugin x: hook turn_start``) should it still run at `close`. RuntimeError
        once closed."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} threads are closed")
            self._work.put((future, label, fn))
            if self._idle:
                self._idle -= 1
            elif self._threads < self._max:
                self._threads += 1
                threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}", daemon=True).start()
        return future

    def close(self) -> list[str]:
        """Shutdown: calls not started yet are cancelled and never start; the labels of those still
        running are logged and returned. Their threads are left to them (a thread cannot be
        stopped), and the process does not wait for them. Idempotent."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    work = self._work.get_nowait()
                except queue.Empty:
                    break
                if work is not None:
                    work[0].cancel()
            for _ in range(self._threads):
                self._work.put(None)
            running = list(self._running.values())
        for label in running:
            log.warning("shutdown: %s is still running; the process will not wait for it", label)
        return running

    def _serve(self) -> None:
        while (work := self._work.get()) is not None:
            future, label, fn = work
            if future.set_running_or_notify_cancel():
                call = next(self._ids)
                with self._lock:
                    self._running[call] = label
                try:
                    future.set_result(fn())  # no local holds the result: an idle thread would keep it alive
                except BaseException as exc:
                    future.set_exception(exc)
                finally:
                    with self._lock:
                        del self._running[call]
            del work, future, fn  # the call's arguments and result are not kept alive while idle
            with self._lock:
                self._idle += 1
