"""Reads of live state for a page (a /metrics scrape, a console snapshot), each guarded on its own."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class LiveReads:
    """Reads of live state for a page (a scrape, a console snapshot), each guarded on its own.

    A read that raises gives its default instead, so the rest of the page is still served: a
    full disk makes every read of the store raise until the writes it rolled back are written
    again, and a page that was a 500 then would hide the very state that says so. Each group
    logs one WARNING when it begins to fail and one INFO when it reads again, not one per page
    (a console refreshes every second, Prometheus scrapes every few). `failing` is each failing
    group's error, as of its latest read; `read_at`, when each group last read (``clock``, monotonic).

    With ``keep_last``, a read that raises gives what its group last read instead, its default only
    before the group ever read: a page scraped into a time series (``/metrics``) whose series went
    missing in one scrape gaps every graph and fires every ``absent()`` alert for a read that is merely
    slow (a long checkpoint) or refused a moment. `read_at` tells how old what it gives is.
    """

    def __init__(self, logger: logging.Logger, page: str, *, keep_last: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._page = page
        self._keep_last = keep_last
        self._clock = clock
        self._last: dict[str, object] = {}
        self.failing: dict[str, BaseException] = {}
        self.read_at: dict[str, float] = {}

    def read(self, group: str, read: Callable[[], T], default: T) -> T:
        try:
            value = read()
        except Exception as exc:
            return self._failed(group, exc, default)
        return self._read(group, value)

    async def read_async(self, group: str, read: Callable[[], Awaitable[T]], default: T) -> T:
        try:
            value = await read()
        except Exception as exc:
            return self._failed(group, exc, default)
        return self._read(group, value)

    @property
    def storage_failed(self) -> bool:
        """A read SQLite refused is failing (a full disk's lost writes, a failing device, a closed database)."""
        return any(isinstance(exc, sqlite3.Error) for exc in self.failing.values())

    def _failed(self, group: str, exc: Exception, default: T) -> T:
        kept = group in self._last
        if group not in self.failing:
            # SQLite's refusal, or a read still under way (`gateway.backlog.SlowRead`), says all there is; anything
            # else is a bug, whose traceback is worth one line.
            self._log.warning("%s: reading %s failed, so %s until it can be read: %s: %s", self._page, group,
                              "its last read is shown" if kept else "it is left out", type(exc).__name__, exc,
                              exc_info=not isinstance(exc, (sqlite3.Error, TimeoutError)))
        self.failing[group] = exc
        return self._last[group] if kept else default  # type: ignore[return-value]

    def _read(self, group: str, value: T) -> T:
        self.read_at[group] = self._clock()
        if self._keep_last:
            self._last[group] = value
        if self.failing.pop(group, None) is not None:
            self._log.info("%s: %s read again", self._page, group)
        return value
