"""The recent warnings and errors this process logged, for the operator console.

A logging handler on the root logger keeps the last `CAPACITY` records at WARNING or
above, redacted as the log is (`gateway.logging`) and with the ids of the turn that
logged them. Only the message and, for an exception, its last line are kept, each cut to
`MESSAGE` characters: the whole of them is in the log. Repeats are folded as in the log (`gateway.log_repeats`): a
line identical to one kept less than ``repeat_window`` seconds ago is counted, not kept, so a
flood of one warning (a stranger writing again and again) cannot push the others out; the count is kept as
its window closes, as the log writes it, not only with a next line of the kind, which may never come.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from gateway.log_repeats import DEFAULT_WINDOW, RepeatFilter
from gateway.logging import ContextFilter, RedactionFilter

CAPACITY = 50
MESSAGE = 1000
"""A message is kept cut to this many characters, its start and its end (a fold's count): the log has it
whole. A warning may quote the page a proxy answered a model call with, up to the log's 16,000 characters,
and fifty of those went to every console page at each change, ten times a second."""


class RecentErrors(logging.Handler):
    """`attach` at start, `detach` at stop; `entries` newest first."""

    def __init__(self, capacity: int = CAPACITY, *, repeat_window: float = DEFAULT_WINDOW) -> None:
        super().__init__(logging.WARNING)
        self._entries: deque[dict[str, Any]] = deque(maxlen=capacity)
        self.addFilter(ContextFilter())
        self.addFilter(RedactionFilter())
        self._repeats = RepeatFilter(repeat_window, emit=self._keep_counted)
        self.version = 0
        """Bumped by every record kept: a view redraws when it changes."""

    def attach(self) -> None:
        root = logging.getLogger()
        if self not in root.handlers:
            root.addHandler(self)

    def detach(self) -> None:
        logging.getLogger().removeHandler(self)
        # The counts not yet kept, and their timer off the loop, which the stop may close next.
        self._repeats.flush(all_counted=True)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # A copy: folding rewrites the message of the next line that passes, and the log's own
            # handler folds the same record by its own count.
            record = logging.makeLogRecord(record.__dict__)
            if self._repeats.filter(record):
                self._keep(record)
        except Exception:
            self.handleError(record)

    def _keep_counted(self, record: logging.LogRecord) -> None:
        """Keep the repeat filter's count of a window that closed: told from its timer too, which holds no lock of
        the handler's as `emit` does."""
        with self.lock:
            try:
                self._keep(record)
            except Exception:
                self.handleError(record)

    def _keep(self, record: logging.LogRecord) -> None:
        entry: dict[str, Any] = {"time": record.created, "level": record.levelname, "logger": record.name,
                                 "message": _cut(record.getMessage()), **getattr(record, "ids", {})}
        if record.exc_text:
            entry["exception"] = _cut(record.exc_text.strip().splitlines()[-1])
        self._entries.append(entry)
        self.version += 1

    def entries(self) -> list[dict[str, Any]]:
        return list(reversed(self._entries))


def _cut(text: str) -> str:
    keep = (MESSAGE - 3) // 2
    return text if len(text) <= MESSAGE else f"{text[:keep]} … {text[-keep:]}"
