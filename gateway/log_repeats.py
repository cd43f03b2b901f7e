"""Rate limiting of repeated log lines: a flood of one error is one line per window.

A client that holds thousands of connections, a disk that is full, a platform that
is down: each makes the same line (often with a traceback) thousands of times a
second, which hides everything else and can fill the disk the log is on.
`RepeatFilter` lets the first record of a kind through, drops identical ones for
``window`` seconds, and adds to the next one that passes how many it dropped:

    ERROR gateway.x: committing failed: disk full (and 5,120 more like it in the last 30 s)

Records are identical when their logger, level, message (after redaction), ids
(session, turn, subagent) and exception type and text are: a line naming another
chat, event or turn is a different line and always passes. A record logged with
``extra=`` `alike` is of the kind it names instead of its message and ids: lines that differ
only in who they name (each refused stranger's) fold into one, the count saying how many
there were (``… in the last 30 s, from 4,700 users``).

Given ``emit`` (the log's handler), a kind whose window closes with lines dropped is
told without waiting for the next one, which may never come (a burst, then silence): its
last dropped line is written with the count of the others, at the time it is written (at its
own, it stood up to a window out of order among the lines after it), and with its exception as
Python writes it below a traceback (of a kind apart from the same line with another one), not
the whole traceback, which the kind's first line had. A timer on the asyncio loop that logs does it;
where no loop runs (a CLI command), `close` does, as at the end of every process that logged.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_WINDOW = 30.0
_MAX_KINDS = 2048  # distinct lines remembered; the least recently seen are forgotten first (told if counted)
_MAX_DISTINCT = 10_000
"""Distinct `alike` values counted per kind and window at most; past them, the count says "more than" them."""
_EARLY = 0.001
"""Seconds before its window closes that a kind is told by the timer: a loop runs a timer up to its clock's
resolution early (and a float's rounding of the delay), and a kind not yet due re-armed one at 0 s, again and
again, until the clock reached it (for ever under a test's clock that does not move)."""


def alike(kind: str, value: str, what: str) -> dict[str, str]:
    """``extra=`` for a record of ``kind`` that differs from the others of it only in ``value``, one ``what`` (a
    word whose plural adds "s") among many: folded with them, counting how many there were."""
    return {"repeat_kind": kind, "repeat_value": value, "repeat_what": what}


@dataclass(slots=True)
class _Seen:
    since: float
    dropped: int = 0
    last_at: float = 0.0
    values: set[str] = field(default_factory=set)


class RepeatFilter(logging.Filter):
    """Drops records identical to one that passed less than ``window`` seconds ago.

    Put it after the redaction filter, so what is compared is what would be printed.
    ``window`` <= 0 lets everything through. ``emit`` writes a record past the filters
    (`flush`). Its own lock serialises its calls: a handler's filters run outside the
    handler's lock, in whichever thread logs, and its timer runs in the loop's.
    """

    def __init__(self, window: float = DEFAULT_WINDOW, *, clock: Callable[[], float] = time.monotonic,
                 emit: Callable[[logging.LogRecord], object] | None = None,
                 mask: Callable[[str], str] = lambda text: text) -> None:
        super().__init__()
        self.window = window
        self._clock = clock
        self._emit = emit
        self._mask = mask
        """Masks the exception a count line names, as the handler masked the first line's traceback."""
        self._seen: OrderedDict[tuple, _Seen] = OrderedDict()
        self._counted: dict[tuple, tuple[_Seen, logging.LogRecord]] = {}
        """The kinds with lines dropped in their window, not yet told, each with its last dropped line."""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.Handle | None = None
        self._timer_due = math.inf

    def filter(self, record: logging.LogRecord) -> bool:
        if self.window <= 0:
            return True
        try:
            key = _kind(record)
        except Exception:  # arguments that do not fit the message: the handler reports it, never the caller
            return True
        evicted: list[logging.LogRecord] = []
        with self._lock:
            passes = self._filter(record, key, evicted)
        for told in evicted:
            self._tell(told)
        return passes

    def _filter(self, record: logging.LogRecord, key: tuple, evicted: list[logging.LogRecord]) -> bool:
        now = self._clock()
        seen = self._seen.get(key)
        value = getattr(record, "repeat_value", None)
        if seen is not None and now - seen.since < self.window:
            seen.dropped += 1
            seen.last_at = now
            if self._emit is not None:
                # Kept as it is but for a traceback, which would keep its frames alive (its exception is kept): a
                # handler filters a copy of its own (`gateway.logging`, the console's), which nothing else reads once
                # dropped.
                self._counted[key] = (seen, record if record.exc_info is None else _untraced(record))
                due = seen.since + self.window
                if due < self._timer_due or self._loop is None or self._loop.is_closed():
                    self._arm(due)
            if value is not None and len(seen.values) <= _MAX_DISTINCT:  # one past them: "more than"
                seen.values.add(str(value))
            self._seen.move_to_end(key)
            return False
        self._counted.pop(key, None)
        if self._emit is not None and (self._loop is None or self._loop.is_closed()):
            # The loop a worker thread's counts are told on. A closed one's timer went with it: left as due, it
            # kept every later count from arming one (a process, or pytest, running loop after loop).
            self._loop, self._timer, self._timer_due = _running_loop(), None, math.inf
            if self._loop is not None and self._counted:
                self._arm(min(seen.since for seen, _ in self._counted.values()) + self.window)
        self._seen[key] = _Seen(now, values={str(value)} if value is not None else set())
        self._seen.move_to_end(key)
        while len(self._seen) > _MAX_KINDS:
            old_key, _ = self._seen.popitem(last=False)
            if (counted := self._counted.pop(old_key, None)) is not None:
                evicted.append(self._summary(*counted, now))
        if seen is not None and seen.dropped:
            record.msg = f"{record.getMessage()} ({_count_text(seen, now - seen.since, record)})"
            record.args = None
        return True

    def flush(self, *, all_counted: bool = False) -> None:
        """Tell each kind whose window has closed with lines dropped (``all_counted``: every kind with lines
        dropped), through ``emit``."""
        with self._lock:
            now = self._clock()
            told = [key for key, (seen, _) in self._counted.items()
                    if all_counted or seen.since + self.window <= now + _EARLY]
            summaries = [self._summary(*self._counted.pop(key), now) for key in told]
            if self._timer is not None:  # none but the one running now, or one `close` ends
                self._timer.cancel()
            self._timer, self._timer_due = None, math.inf
            if self._counted and not all_counted:
                self._arm(min(seen.since for seen, _ in self._counted.values()) + self.window)
        for summary in summaries:
            self._tell(summary)

    def close(self) -> None:
        """Tell every count not yet told; nothing is told after this (the handler's stream is its owner's)."""
        self.flush(all_counted=True)
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._emit, self._timer, self._timer_due, self._loop = None, None, math.inf, None

    def _summary(self, seen: _Seen, last: logging.LogRecord, now: float) -> logging.LogRecord:
        """``last``, the last dropped line of ``seen``, with the count of the others, made ``now``. It stands for the
        line that passes at the end of a window: the next window starts ``now``, so a flood that goes on is one line
        a window."""
        record = _untraced(last, made_now=True)
        if (exception := record.__dict__.pop(_EXCEPTION, None)) is not None:
            record.exc_text = self._mask(exception)
        seen.dropped -= 1  # the line told is one of them
        if seen.dropped:
            record.msg = f"{record.msg} ({_count_text(seen, now - seen.since, record)})"
        seen.since, seen.dropped, seen.values = now, 0, set()
        return record

    def _tell(self, record: logging.LogRecord) -> None:
        emit = self._emit
        if emit is not None:
            emit(record)

    def _arm(self, due: float) -> None:
        """Have `flush` run once ``due`` (on the filter's clock) has come: on the asyncio loop running in this
        thread, or the last one seen, from another thread. None where no loop ever ran (`close` tells then)."""
        loop = self._loop
        if loop is not None and loop.is_closed():  # its timer went with it
            loop, self._loop, self._timer, self._timer_due = None, None, None, math.inf
        if due >= self._timer_due:
            return
        running = _running_loop()
        try:
            if running is not None:
                timer: asyncio.Handle = running.call_later(max(0.0, due - self._clock()), self.flush)
                self._loop = running
            elif loop is not None:
                timer = loop.call_soon_threadsafe(self._rearm)  # call_later is the loop's thread's alone
            else:
                return
        except RuntimeError:  # the loop closed meanwhile
            self._loop = None
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = timer, due

    def _rearm(self) -> None:
        with self._lock:
            self._timer, self._timer_due = None, math.inf
            if self._counted:
                self._arm(min(seen.since for seen, _ in self._counted.values()) + self.window)


_running_loop = asyncio._get_running_loop
"""The loop running in this thread, or None: the form asyncio exports for loops of other makers, which raises
nothing (`asyncio.get_running_loop` raised in every thread without one, a CLI command's too, at every line)."""


def _untraced(record: logging.LogRecord, *, made_now: bool = False) -> logging.LogRecord:
    """A copy of ``record`` with its message made, without its stack, and of its traceback only the exception, as
    Python writes it below the traceback (`_exception`; masked as the traceback is once told, `_summary`), or, with
    no exception at hand, the traceback's last line, as the console keeps it (`RecentErrors`); with the time of now
    (``made_now``). The last line is no exception's for a group (its box), a message of several lines or a note."""
    exc = record.exc_info[1] if record.exc_info else None
    made = {**record.__dict__, "msg": record.getMessage(), "args": None, "exc_info": None,
            "exc_text": _last_line(record.exc_text) if exc is None else None, "stack_info": None}
    if exc is not None:
        made[_EXCEPTION] = _exception(exc)
    if made_now:
        now = logging.makeLogRecord({})
        made.update(created=now.created, msecs=now.msecs, relativeCreated=now.relativeCreated)
    return logging.makeLogRecord(made)


_EXCEPTION = "_repeat_exception"
"""A dropped line's exception as `_exception` wrote it, not yet masked: masked once, as it is told."""


def _exception(exc: BaseException) -> str:
    """What Python writes of ``exc`` below its traceback (`traceback.format_exception_only`, which also walks the
    tracebacks of the exceptions chained to it, at each line of a flood): its type, its message and its notes."""
    kind = type(exc)
    module = getattr(kind, "__module__", None)
    name = kind.__qualname__ if module in ("builtins", "__main__", None) else f"{module}.{kind.__qualname__}"
    text = str(exc)
    lines = [f"{name}: {text}" if text else name]
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, (list, tuple)):
        lines += [str(note) for note in notes]
    return "\n".join(lines)


def _last_line(text: str | None) -> str | None:
    """``text.strip().splitlines()[-1]`` (None for a blank text), found from its end: split (or stripped) whole, a
    traceback took three times as long to drop, at each line of a flood."""
    if not text:
        return None
    lead = _SPACES.match(text).end()
    end = len(text)
    while end > lead:
        start = max(text.rfind("\n", 0, end) + 1, lead)
        if line := text[start:end].rstrip():
            return line.splitlines()[-1]
        end = start - 1
    return None


_SPACES = re.compile(r"\s*")
"""What `str.strip` takes off a text's start (``\\s`` of a str pattern is `str.isspace`)."""


def _count_text(seen: _Seen, elapsed: float, record: logging.LogRecord) -> str:
    text = f"and {seen.dropped:,} more like it in the last {elapsed:.0f} s"
    if seen.values:
        what = getattr(record, "repeat_what", "value")
        many = f"more than {_MAX_DISTINCT:,}" if len(seen.values) > _MAX_DISTINCT else f"{len(seen.values):,}"
        text += f", from {many} {what}{'' if len(seen.values) == 1 else 's'}"
    return text


def _kind(record: logging.LogRecord) -> tuple:
    exc = record.exc_info[1] if record.exc_info else None
    kind = getattr(record, "repeat_kind", None)
    if kind is not None:
        what: tuple = ("alike", str(kind))
    else:
        ids = getattr(record, "ids", None) or {}
        what = (record.getMessage(), tuple(sorted(ids.items())))
    return (record.name, record.levelno, *what,
            type(exc).__name__ if exc is not None else None, str(exc) if exc is not None else None)
