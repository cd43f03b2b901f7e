"""The console's recent warnings and errors tell a count of repeats as the log does: as its window closes (a timer on
the loop that logs, on a fake clock here), or as the console's handler is detached, not only with a next line of the
kind, which may never come. A burst then silence was one line there, and no count."""

from __future__ import annotations

import asyncio
import logging

from gateway.console.recent_errors import RecentErrors

log = logging.getLogger("gateway.test.console_told")


class _FakeTimeLoop(asyncio.SelectorEventLoop):
    """A loop whose clock the test moves: its timers fire once the test has moved it past them."""

    now = 1000.0

    def time(self) -> float:
        return self.now


async def _turns(until, n: int = 50) -> None:
    for _ in range(n):
        if until():
            return
        await asyncio.sleep(0)


def _messages(recent: RecentErrors) -> list[str]:
    return [entry["message"] for entry in recent.entries()]


def test_a_burst_then_silence_is_counted_as_its_window_closes():
    loop = _FakeTimeLoop()
    recent = RecentErrors(repeat_window=30)
    recent._repeats._clock = loop.time

    async def burst() -> None:
        for _ in range(5):
            log.warning("platform down")
            loop.now += 1
        await _turns(lambda: False, 5)
        assert _messages(recent) == ["platform down"]  # within the window: nothing yet
        version = recent.version
        loop.now = 1000.0 + 30
        await _turns(lambda: len(recent.entries()) == 2)
        assert recent.version == version + 1  # a view redraws for it
        await _turns(lambda: False, 5)  # once: not told again, nor folded into the next line
        loop.now += 30
        log.warning("platform down")

    recent.attach()
    try:
        loop.run_until_complete(burst())
    finally:
        recent.detach()
        loop.close()
    assert _messages(recent) == ["platform down", "platform down (and 3 more like it in the last 30 s)",
                                 "platform down"]
    told = recent.entries()[1]
    assert (told["level"], told["logger"], told["time"] > recent.entries()[2]["time"]) == (
        "WARNING", "gateway.test.console_told", True)


def test_a_count_not_yet_told_is_kept_as_the_console_is_detached():
    now = [0.0]
    recent = RecentErrors(repeat_window=30)
    recent._repeats._clock = lambda: now[0]
    recent.attach()
    try:
        for _ in range(4):
            log.warning("cannot read the journal")
            now[0] += 2
        assert _messages(recent) == ["cannot read the journal"]
    finally:
        recent.detach()
    assert _messages(recent) == ["cannot read the journal (and 2 more like it in the last 8 s)",
                                 "cannot read the journal"]
    log.warning("cannot read the journal")  # detached: nothing more
    assert len(recent.entries()) == 2
