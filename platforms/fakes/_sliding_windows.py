"""Sliding windows of the calls a fake platform let through, for limits stated as "at most N in
any S seconds" (Telegram's flood limits, Slack's per-channel and tiered limits).

A call is counted in each window it falls in, under a key (a chat, a channel, a method); one that
would put more than a window's count in it is refused, and the platform's retry-after is the whole
seconds until the oldest call in that window leaves it. A refused call did nothing, so it is not
counted; one the platform then answers with another error is taken back (`uncount`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Protocol


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


@dataclass(frozen=True)
class Window:
    """At most ``count`` calls in any ``seconds``."""

    count: int
    seconds: float


class SlidingWindows:
    def __init__(self, clock: MonotonicClock) -> None:
        self._clock = clock
        self._recent: dict[Hashable, deque[float]] = {}

    def now(self) -> float:
        return self._clock.monotonic()

    def retry_after(self, key: Hashable, window: Window, now: float) -> int | None:
        """The whole seconds until ``key``'s ``window`` has room for one more call, or None if it has now."""
        stamps = self._recent.setdefault(key, deque())
        while stamps and stamps[0] <= now - window.seconds:
            stamps.popleft()
        if len(stamps) < window.count:
            return None
        return max(1, math.ceil(stamps[-window.count] + window.seconds - now))

    def count(self, keys: Iterable[Hashable], at: float) -> None:
        """A call let through at ``at``, in each of ``keys``' windows."""
        for key in keys:
            self._recent.setdefault(key, deque()).append(at)

    def uncount(self, keys: Iterable[Hashable], at: float) -> None:
        """Take back the call counted at ``at``: it did nothing after all."""
        for key in keys:
            stamps = self._recent.get(key)
            if stamps is not None and at in stamps:
                stamps.remove(at)
