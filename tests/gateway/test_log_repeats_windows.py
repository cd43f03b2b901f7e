"""Review of f4577e23 (the repeat filter's counts told as their window closes)."""

from __future__ import annotations

import asyncio
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.log_repeats import RepeatFilter, alike


class _FakeTimeLoop(asyncio.SelectorEventLoop):
    now = 1000.0

    def time(self) -> float:
        return self.now


async def _turns(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _record(msg: str) -> logging.LogRecord:
    return logging.makeLogRecord({"msg": msg, "levelno": logging.WARNING, "levelname": "WARNING"})


def test_a_count_is_told_on_a_loop_that_follows_one_closed_with_its_timer_pending():
    # pytest's loop per test, or a process running asyncio.run twice: the first loop closed with a timer pending
    # on it; the second loop's burst then silence was told only as the handler closed.
    clock = [1000.0]
    told: list[str] = []
    repeats = RepeatFilter(30, clock=lambda: clock[0], emit=lambda record: told.append(record.getMessage()))

    first = _FakeTimeLoop()

    async def on_first() -> None:
        repeats.filter(_record("a"))
        repeats.filter(_record("a"))  # dropped: a timer on this loop, due at 1030

    first.run_until_complete(on_first())
    first.close()  # its timer never fires

    second = _FakeTimeLoop()
    second.now = clock[0] = 1040.0

    async def on_second() -> None:
        assert repeats.filter(_record("b"))
        assert not repeats.filter(_record("b"))
        second.now = clock[0] = 1071.0
        await _turns()

    try:
        second.run_until_complete(on_second())
    finally:
        second.close()
    assert "b" in told, told
    repeats.close()


def _accounted(lines: list[str]) -> dict[str, int]:
    """How many logged lines each kind's written lines stand for: one, and the count each says."""
    total: dict[str, int] = {}
    for line in lines:
        kind, _, rest = line.partition(" (and ")
        total[kind] = total.get(kind, 0) + 1 + (int(rest.split()[0].replace(",", "")) if rest else 0)
    return total


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("log"), st.sampled_from("abcde")),
                          st.tuples(st.just("wait"), st.floats(0, 40)),
                          st.tuples(st.just("flush"), st.none())), max_size=60),
       st.integers(2, 6))
def test_every_line_logged_is_written_or_counted_once(steps, kinds):
    import gateway.log_repeats as repeats_module

    clock = [0.0]
    written: list[str] = []
    old = repeats_module._MAX_KINDS
    repeats_module._MAX_KINDS = kinds
    try:
        repeats = RepeatFilter(30, clock=lambda: clock[0], emit=lambda record: written.append(record.getMessage()))
        logged: dict[str, int] = {}
        for step, arg in steps:
            if step == "log":
                logged[arg] = logged.get(arg, 0) + 1
                record = _record(arg)
                if repeats.filter(record):
                    written.append(record.getMessage())
            elif step == "wait":
                clock[0] += arg
            else:
                repeats.flush()
        repeats.close()
    finally:
        repeats_module._MAX_KINDS = old
    assert _accounted(written) == logged, written


def test_exactly_the_most_distinct_values_counted_is_not_said_to_be_more(monkeypatch):
    monkeypatch.setattr("gateway.log_repeats._MAX_DISTINCT", 5)
    told: list[str] = []
    repeats = RepeatFilter(30, clock=lambda: 0.0, emit=lambda record: told.append(record.getMessage()))

    def refused(users: range) -> None:
        for user in users:
            record = logging.makeLogRecord({"msg": f"refused telegram user {user}", **alike("refused", str(user),
                                                                                            "user")})
            repeats.filter(record)

    refused(range(5))
    repeats.close()
    assert told == ["refused telegram user 4 (and 3 more like it in the last 0 s, from 5 users)"]
    told.clear()
    repeats = RepeatFilter(30, clock=lambda: 0.0, emit=lambda record: told.append(record.getMessage()))
    refused(range(6))
    repeats.close()
    assert told == ["refused telegram user 5 (and 4 more like it in the last 0 s, from more than 5 users)"]


class _CountingLoop(_FakeTimeLoop):
    timers = 0

    def call_later(self, *args, **kwargs):
        self.timers += 1
        return super().call_later(*args, **kwargs)


def test_a_flood_arms_one_timer_a_window_not_one_a_line():
    loop = _CountingLoop()
    told: list[str] = []
    repeats = RepeatFilter(30, clock=loop.time, emit=lambda record: told.append(record.getMessage()))

    async def flood() -> None:
        for _ in range(3):
            for _ in range(1000):
                repeats.filter(_record("down"))
                loop.now += 0.029
            loop.now += 1
            await _turns()

    try:
        loop.run_until_complete(flood())
    finally:
        loop.close()
    assert loop.timers <= 4, loop.timers
    repeats.close()
