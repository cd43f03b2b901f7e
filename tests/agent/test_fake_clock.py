"""agent.testing.FakeClock: autojump and manual time for tests."""

from __future__ import annotations

import asyncio

from agent.testing import FakeClock


async def test_autojump_sleeps_advance_time_at_once_and_are_recorded():
    clock = FakeClock()
    before = clock.time()
    await clock.sleep(90)
    await clock.sleep(0.5)
    assert clock.time() == before + 90.5
    assert clock.sleeps == [90, 0.5]


async def test_manual_sleepers_wake_in_deadline_order_only_when_time_reaches_them():
    clock = FakeClock(autojump=False)
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.ensure_future(sleeper("late", 10)), asyncio.ensure_future(sleeper("early", 3))]
    await clock.until_sleeping(2)
    clock.advance(2)
    await asyncio.sleep(0)
    assert woke == []
    clock.advance(8)
    await asyncio.gather(*tasks)
    assert woke == ["early", "late"]


async def test_a_cancelled_manual_sleeper_is_forgotten():
    clock = FakeClock(autojump=False)
    task = asyncio.ensure_future(clock.sleep(5))
    await clock.until_sleeping()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert clock.sleeping == 0


async def test_a_jump_moves_wall_time_only_and_wakes_no_sleeper():
    clock = FakeClock(autojump=False)
    task = asyncio.ensure_future(clock.sleep(5))
    await clock.until_sleeping()
    wall, monotonic = clock.time(), clock.monotonic()
    clock.jump(8 * 3600)  # a night's suspend
    assert (clock.time(), clock.monotonic()) == (wall + 8 * 3600, monotonic)
    await asyncio.sleep(0)
    assert not task.done()
    clock.jump(-60)  # NTP steps it back a minute
    clock.advance(5)
    await task
    assert (clock.time(), clock.monotonic()) == (wall + 8 * 3600 - 60 + 5, monotonic + 5)
