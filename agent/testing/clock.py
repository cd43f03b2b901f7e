"""A clock for tests: time moves only when the test (or the code under test) says so.

Two modes. **Autojump** (the default): every `FakeClock.sleep` advances time by
its own length at once, so retry and backoff loops that sleep minutes finish in
microseconds and record what they slept. **Manual**: sleepers wait until the test
calls `FakeClock.advance` past their deadline — for code that sleeps in a loop
forever (notices, heartbeats), where autojump would spin.

Wall time can also move apart from monotonic time (`FakeClock.jump`): a machine waking from
a suspend, or an NTP step.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

EPOCH = 1_700_000_000.0


class FakeClock:
    """Implements `agent.Clock`. ``time()`` and ``monotonic()`` read the same counter, ``time()``
    plus what `jump` added."""

    def __init__(self, *, autojump: bool = True, start: float = EPOCH) -> None:
        self.now = start
        self.wall_ahead = 0.0
        """Seconds ``time()`` is ahead of ``monotonic()`` (negative: behind), by `jump`."""
        self.autojump = autojump
        self.sleeps: list[float] = []
        """Every duration passed to `sleep`, in call order."""
        self._sleepers: list[tuple[float, int, asyncio.Future[None], float]] = []
        self._order = itertools.count()
        self._slept = asyncio.Event()

    def time(self) -> float:
        return self.now + self.wall_ahead

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.autojump:
            self.now += max(seconds, 0.0)
            await asyncio.sleep(0)
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(seconds, 0.0), next(self._order), future, seconds))
        self._slept.set()
        try:
            await future
        finally:
            if not future.done():  # the sleeper was cancelled: forget it
                self._sleepers = [s for s in self._sleepers if s[2] is not future]
                heapq.heapify(self._sleepers)

    @property
    def sleeping(self) -> int:
        """How many tasks are in a manual-mode `sleep` right now."""
        return self._count(None)

    def _count(self, lasting: float | None) -> int:
        return sum(1 for s in self._sleepers if not s[2].done() and (lasting is None or s[3] == lasting))

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come (in deadline order)."""
        self.now += seconds
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, future, _ = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    def jump(self, seconds: float) -> None:
        """Move wall time (``time()``) by ``seconds``, back if negative, and not monotonic time, so
        no sleeper wakes: the machine was suspended that long (Linux's monotonic clock stops in a
        suspend; the process's timers resume where they were), or NTP stepped the clock."""
        self.wall_ahead += seconds

    async def until_sleeping(self, count: int = 1, *, lasting: float | None = None, timeout: float = 5.0) -> None:
        """Wait (in real time, at most ``timeout`` seconds) until ``count`` tasks sleep on this clock
        (only sleeps of exactly ``lasting`` seconds count, when given)."""
        async with asyncio.timeout(timeout):
            while self._count(lasting) < count:
                self._slept.clear()
                await self._slept.wait()
