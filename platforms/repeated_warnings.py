"""Warnings of one cause that recurs while it lasts: logged once, then counted.

A Discord channel that was deleted (or where the bot lost its permission) refuses every
typing refresh of a turn, every few seconds for as long as the turn runs; a stranger
posting to the Telegram webhook is refused at every request, from as many addresses as
they have. The log's repeat filter (``logging.repeat_window_seconds``) folds only lines
that are identical, for a short window, so such a cause still wrote a line every 30 s,
or one per request when the address changed. Here the adapter names the cause: its first
warning is logged, later ones within ``window`` seconds are counted, and the first one
after that is logged with how many there were:

    discord: POST /channels/{channel_id}/typing for channel 701 failed: NotFound: ...
        (and 99 more like it in the last 600 s)

A cause counted when its window closes is told then, on the asyncio loop that counted it, without waiting for a
next line that may never come (a burst of refused requests, then silence): its last line, with the count of the
others (as `gateway.log_repeats` tells the log's repeats), and the next window starts there. Counted where no loop
runs, it is told by the next line alone. A stop within the window tells the causes still counted on its loop
(`tell_counted`, the gateway's stop), else an operator who stopped the gateway never learned of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

WINDOW_SECONDS = 600.0
CAUSES = 256
"""Causes remembered; the least recently seen is forgotten first (it is logged again when it recurs)."""


@dataclass(slots=True, weakref_slot=True)
class _Seen:
    since: float
    dropped: int = 0
    last: tuple[str, float] = ("", 0.0)
    """The last line counted and its time: made at once, not kept as its arguments (an error, with its traceback's
    frames, for ten minutes)."""
    timer: asyncio.TimerHandle | None = None
    """Tells the count as the window closes (`RepeatedWarnings._tell`)."""
    loop: asyncio.AbstractEventLoop | None = None
    """The loop ``timer`` is on, whose stop tells the count first (`tell_counted`)."""


_armed: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                  dict[int, tuple[weakref.ref[RepeatedWarnings], weakref.ref[_Seen]]]] = (
    weakref.WeakKeyDictionary())
"""The counts each loop has a timer for, by the id of their `_Seen`: what a stop on that loop tells at once. A loop's
own, so a stop tells nothing counted on another (a test's loop before it). Held weakly: a `_Seen` holds its timer,
which holds its loop, so a loop closed with a count untold (its stop never came to `tell_counted`) was kept for good,
with the warnings that counted on it; while the loop runs, its timer's callback holds both."""


def tell_counted() -> None:
    """Tell every cause counted on the running loop and not yet told, as its window would close: the loop is
    stopping (`Gateway.stop`), and its timers go with it, the counts untold."""
    loop = asyncio.get_running_loop()
    for warnings, seen in list(_armed.pop(loop, {}).values()):
        if (told := warnings()) is not None and (counted := seen()) is not None:
            told._tell(counted)


class RepeatedWarnings:
    def __init__(self, logger: logging.Logger, *, window: float = WINDOW_SECONDS,
                 clock: Callable[[], float] = time.monotonic, causes: int = CAUSES,
                 level: int = logging.WARNING) -> None:
        """``level``: the lines' level; INFO for a cause that is routine, yet may recur at every request."""
        self._log = logger
        self._level = level
        self._window = window
        self._clock = clock
        self._causes = causes
        self._seen: OrderedDict[Hashable, _Seen] = OrderedDict()

    def warning(self, cause: Hashable, msg: str, *args: object) -> None:
        """Log ``msg % args`` unless ``cause`` was logged less than ``window`` seconds ago (then count it)."""
        now = self._clock()
        seen = self._seen.get(cause)
        if seen is not None and now - seen.since < self._window:
            seen.dropped += 1
            seen.last = (msg % args if args else msg, now)
            self._seen.move_to_end(cause)
            if seen.timer is None:
                self._arm(seen, now)
            return
        if seen is not None and seen.timer is not None:  # this line tells the count
            _disarm(seen)
        self._seen[cause] = _Seen(now)
        self._seen.move_to_end(cause)
        while len(self._seen) > self._causes:
            self._seen.popitem(last=False)
        if seen is not None and seen.dropped:
            self._log.log(self._level, "%s (and %s more like it in the last %.0f s)", msg % args if args else msg,
                          f"{seen.dropped:,}", now - seen.since, stacklevel=2)
        else:
            self._log.log(self._level, msg, *args, stacklevel=2)

    def _arm(self, seen: _Seen, now: float) -> None:
        """Have `_tell` run as ``seen``'s window closes, on the loop running here; none runs in a thread of its own."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        seen.timer, seen.loop = loop.call_later(seen.since + self._window - now, self._tell, seen), loop
        _armed.setdefault(loop, {})[id(seen)] = (weakref.ref(self), weakref.ref(seen))

    def _tell(self, seen: _Seen) -> None:
        """``seen``'s last line counted, with the count of the others in the window so far; the next window starts
        now. A cause forgotten meanwhile (`CAUSES`) is told all the same."""
        _disarm(seen)
        line = seen.last[0]
        now = self._clock()
        # The line is written now (as the window closes, or the stop comes): its span ends here, not at the last
        # line counted, which may be long before (a burst, then a stop: "in the last 5 s" of a line 5 minutes on).
        others, elapsed = seen.dropped - 1, now - seen.since
        seen.since, seen.dropped, seen.last = now, 0, ("", 0.0)
        if others:
            self._log.log(self._level, "%s (and %s more like it in the last %.0f s)", line, f"{others:,}", elapsed)
        else:
            self._log.log(self._level, "%s", line)


def _disarm(seen: _Seen) -> None:
    if seen.timer is not None:
        seen.timer.cancel()
    if seen.loop is not None and (armed := _armed.get(seen.loop)) is not None:
        armed.pop(id(seen), None)
    seen.timer = seen.loop = None
