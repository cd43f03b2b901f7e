"""Rate limiting of repeated log lines: a flood of one error is one line per window.

A client that holds thousands of connections, a disk that is full, a platform that
is down: each makes the same line (often with a traceback) thousands of times a
second, which hides everything else and can fill the disk the log is on.
`RepeatFilter` lets the first record of a kind through, drops identical ones for
``window`` seconds, and adds to the next one that passes how many it dropped:

    ERROR gateway.x: committing failed: disk full (and 5,120 more like it in the last 30 s)

Records are identical when their logger, level, message (after redaction), ids
(session, turn, subagent) and exception type and text are: a line naming another
chat, event or turn is a different line and always passes.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_WINDOW = 30.0
_MAX_KINDS = 2048  # distinct lines remembered; the least recently seen are forgotten first


@dataclass(slots=True)
class _Seen:
    since: float
    dropped: int = 0


class RepeatFilter(logging.Filter):
    """Drops records identical to one that passed less than ``window`` seconds ago.

    Put it after the redaction filter, so what is compared is what would be printed.
    ``window`` <= 0 lets everything through. Thread-safe enough for logging: the
    handler's lock serialises calls to its filters.
    """

    def __init__(self, window: float = DEFAULT_WINDOW, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self._clock = clock
        self._seen: OrderedDict[tuple, _Seen] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.window <= 0:
            return True
        try:
            key = _kind(record)
        except Exception:  # arguments that do not fit the message: the handler reports it, never the caller
            return True
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen.since < self.window:
            seen.dropped += 1
            self._seen.move_to_end(key)
            return False
        self._seen[key] = _Seen(now)
        self._seen.move_to_end(key)
        while len(self._seen) > _MAX_KINDS:
            self._seen.popitem(last=False)
        if seen is not None and seen.dropped:
            elapsed = now - seen.since
            record.msg = f"{record.getMessage()} (and {seen.dropped:,} more like it in the last {elapsed:.0f} s)"
            record.args = None
        return True


def _kind(record: logging.LogRecord) -> tuple:
    exc = record.exc_info[1] if record.exc_info else None
    ids = getattr(record, "ids", None) or {}
    return (record.name, record.levelno, record.getMessage(), tuple(sorted(ids.items())),
            type(exc).__name__ if exc is not None else None, str(exc) if exc is not None else None)
