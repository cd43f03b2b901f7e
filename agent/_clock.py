"""Time as a seam: liveness, notices and durations read a clock object that tests replace."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch (for records people read)."""

    def monotonic(self) -> float:
        """Seconds for measuring intervals."""

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    __slots__ = ()

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
