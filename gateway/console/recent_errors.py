"""The recent warnings and errors this process logged, for the operator console.

A logging handler on the root logger keeps the last `CAPACITY` records at WARNING or
above, redacted as the log is (`gateway.logging`) and with the ids of the turn that
logged them. Only the message and, for an exception, its last line are kept: the
full traceback is in the log.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from gateway.logging import ContextFilter, RedactionFilter

CAPACITY = 50


class RecentErrors(logging.Handler):
    """`attach` at start, `detach` at stop; `entries` newest first."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        super().__init__(logging.WARNING)
        self._entries: deque[dict[str, Any]] = deque(maxlen=capacity)
        self.addFilter(ContextFilter())
        self.addFilter(RedactionFilter())
        self.version = 0
        """Bumped by every record kept: a view redraws when it changes."""

    def attach(self) -> None:
        root = logging.getLogger()
        if self not in root.handlers:
            root.addHandler(self)

    def detach(self) -> None:
        logging.getLogger().removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            entry: dict[str, Any] = {"time": record.created, "level": record.levelname, "logger": record.name,
                                     "message": record.getMessage(), **getattr(record, "ids", {})}
            if record.exc_text:
                entry["exception"] = record.exc_text.strip().splitlines()[-1]
            self._entries.append(entry)
            self.version += 1
        except Exception:
            self.handleError(record)

    def entries(self) -> list[dict[str, Any]]:
        return list(reversed(self._entries))
