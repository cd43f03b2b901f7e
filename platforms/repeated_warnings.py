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
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

WINDOW_SECONDS = 600.0
CAUSES = 256
"""Causes remembered; the least recently seen is forgotten first (it is logged again when it recurs)."""


@dataclass(slots=True)
class _Seen:
    since: float
    dropped: int = 0


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
            self._seen.move_to_end(cause)
            return
        self._seen[cause] = _Seen(now)
        self._seen.move_to_end(cause)
        while len(self._seen) > self._causes:
            self._seen.popitem(last=False)
        if seen is not None and seen.dropped:
            self._log.log(self._level, "%s (and %s more like it in the last %.0f s)", msg % args if args else msg,
                          f"{seen.dropped:,}", now - seen.since, stacklevel=2)
        else:
            self._log.log(self._level, msg, *args, stacklevel=2)
