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

    # The clock functions themselves, not methods calling them: every child reads the clock
    # about ten times, and a method call around the builtin doubled the cost of each read.
    monotonic = staticmethod(time.monotonic)  # before `time` names the method in this body
    """Seconds for measuring intervals (`time.monotonic`)."""
    time = staticmethod(time.time)
    """Wall-clock seconds since the epoch (`time.time`)."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
