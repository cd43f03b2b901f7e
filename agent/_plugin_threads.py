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
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger("agent.plugins")

T = TypeVar("T")
_Work = tuple[Future[Any], str, Callable[[], Any], str | None]


class PluginThreads:
    """Up to ``max_workers`` daemon threads, started as calls need them, each running one call at a time.
    Calls of one ``key`` (a chat) hold at most ``per_key`` of them, so one chat's hung calls cannot
    take the threads every other chat's calls need."""

    def __init__(self, max_workers: int, name: str, *, per_key: int | None = None) -> None:
        self._max, self._name, self._per_key = max_workers, name, per_key or max_workers
        self._waiting: deque[_Work] = deque()
        """Calls no thread was given yet, oldest first."""
        self._ready: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        """Calls given a thread, for the next idle one to take."""
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._given = 0
        """Calls given a thread that have not returned (at most ``max_workers``)."""
        self._given_per_key: dict[str, int] = {}
        self._told: set[str | None] = set()
        """The bounds a call was logged waiting for (a key, or None for ``max_workers``), until one frees:
        a flood of calls behind one hung service logs one line, not one per call."""
        self._running: dict[int, str] = {}
        self._ids = itertools.count()
        self._closed = False

    def submit(self, label: str, fn: Callable[[], T], key: str | None = None) -> Future[T]:
        """Run ``fn()`` in one of the threads (queued while all are busy, or while ``key``'s calls
        hold its share); ``label`` says whose call it is (``plugin x: hook turn_start``) in the log,
        should it wait or still run at `close`. RuntimeError once closed."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} threads are closed")
            self._waiting.append((future, label, fn, key))
            self._dispatch()
            if self._waiting and self._waiting[-1][0] is future:
                self._tell_wait(label, key)
        return future

    def close(self) -> list[str]:
        """Shutdown: calls not started yet are cancelled and never start; the labels of those still
        running are logged and returned. Their threads are left to them (a thread cannot be
        stopped), and the process does not wait for them. Idempotent."""
        with self._lock:
            self._closed = True
            for work in self._waiting:
                work[0].cancel()
            self._waiting.clear()
            while True:
                try:
                    work = self._ready.get_nowait()
                except queue.Empty:
                    break
                if work is not None:
                    work[0].cancel()
            for _ in range(self._threads):
                self._ready.put(None)
            running = list(self._running.values())
        for label in running:
            log.warning("shutdown: %s is still running; the process will not wait for it", label)
        return running

    def _dispatch(self) -> None:
        """Give threads to waiting calls, oldest first, as far as the bounds allow (lock held)."""
        held_back: deque[_Work] = deque()
        while self._waiting and self._given < self._max:
            work = self._waiting.popleft()
            key = work[3]
            if work[0].cancelled():  # its caller stopped waiting (the turn was interrupted)
                continue
            if key is not None and self._given_per_key.get(key, 0) >= self._per_key:
                held_back.append(work)
                continue
            self._given += 1
            if key is not None:
                self._given_per_key[key] = self._given_per_key.get(key, 0) + 1
            self._ready.put(work)
            if self._idle:
                self._idle -= 1
            else:
                self._threads += 1
                threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}", daemon=True).start()
        held_back.extend(self._waiting)
        self._waiting = held_back

    def _tell_wait(self, label: str, key: str | None) -> None:
        bound = None if self._given >= self._max else key
        if bound in self._told:
            return
        self._told.add(bound)
        if bound is None:
            log.warning("%d %s calls are running, as many as may run at once; %s waits for one to end",
                        self._given, self._name, label)
        else:
            log.warning("%d %s calls for %s are running, as many as one may have; %s waits for one to end",
                        self._given_per_key[key], self._name, key, label)

    def _serve(self) -> None:
        while (work := self._ready.get()) is not None:
            future, label, fn, key = work
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
                self._given -= 1
                if key is not None:
                    left = self._given_per_key.pop(key) - 1
                    if left:
                        self._given_per_key[key] = left
                self._idle += 1
                if not self._closed:
                    self._dispatch()
                if self._given < self._max:
                    self._told.discard(None)
                if key is not None and self._given_per_key.get(key, 0) < self._per_key:
                    self._told.discard(key)
