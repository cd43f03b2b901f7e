"""Reads of live state for a page (a /metrics scrape, a console snapshot), each guarded on its own."""

from __future__ import annotations

import logging
import sqlite3
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
    group's error, as of its latest read.
    """

    def __init__(self, logger: logging.Logger, page: str) -> None:
        self._log = logger
        self._page = page
        self.failing: dict[str, BaseException] = {}

    def read(self, group: str, read: Callable[[], T], default: T) -> T:
        try:
            value = read()
        except Exception as exc:
            self._failed(group, exc)
            return default
        self._read(group)
        return value

    async def read_async(self, group: str, read: Callable[[], Awaitable[T]], default: T) -> T:
        try:
            value = await read()
        except Exception as exc:
            self._failed(group, exc)
            return default
        self._read(group)
        return value

    @property
    def storage_failed(self) -> bool:
        """A read SQLite refused is failing (a full disk's lost writes, a failing device, a closed database)."""
        return any(isinstance(exc, sqlite3.Error) for exc in self.failing.values())

    def _failed(self, group: str, exc: Exception) -> None:
        if group not in self.failing:
            # SQLite's refusal, or a read still under way (`gateway.backlog.SlowRead`), says all there is; anything
            # else is a bug, whose traceback is worth one line.
            self._log.warning("%s: reading %s failed, so it is left out until it can be read: %s: %s", self._page,
                              group, type(exc).__name__, exc,
                              exc_info=not isinstance(exc, (sqlite3.Error, TimeoutError)))
        self.failing[group] = exc

    def _read(self, group: str) -> None:
        if self.failing.pop(group, None) is not None:
            self._log.info("%s: %s read again", self._page, group)
