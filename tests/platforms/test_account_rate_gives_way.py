"""`platforms.pacing.AccountRate`: a write that gives way (`GIVES_WAY`, a progress card's) goes after every
other write waiting, and a caller that stops waiting gives its turn to those behind it. On a manual fake
clock: time moves only when the test says so."""

from __future__ import annotations

import asyncio

from agent.testing.clock import FakeClock
from platforms.pacing import GIVES_WAY, AccountRate


async def take_turn(rate: AccountRate, clock: FakeClock, went: list[tuple[str, float]], name: str,
                    gives_way: bool = False) -> None:
    GIVES_WAY.set(gives_way)  # this task's own context: the outbox sets it around a progress message's call
    await rate.turn()
    went.append((name, clock.monotonic()))


async def test_writes_that_give_way_go_after_every_other_write_waiting_whenever_it_came() -> None:
    clock = FakeClock(autojump=False)
    start = clock.monotonic()
    rate = AccountRate(2, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    went: list[tuple[str, float]] = []
    tasks = [asyncio.ensure_future(take_turn(rate, clock, went, f"edit {n}", gives_way=True)) for n in range(5)]
    await clock.until_sleeping(3)  # two went at once, three wait
    tasks += [asyncio.ensure_future(take_turn(rate, clock, went, f"answer {n}")) for n in range(3)]
    await clock.until_sleeping(6)
    for _ in range(4):
        clock.advance(1.0)
        for _ in range(20):
            await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert [(name, at - start) for name, at in went] == [
        ("edit 0", 0.0), ("edit 1", 0.0), ("answer 0", 1.0), ("answer 1", 1.0), ("answer 2", 2.0),
        ("edit 2", 2.0), ("edit 3", 3.0), ("edit 4", 3.0)]


async def test_a_caller_that_stops_waiting_gives_its_turn_to_the_next_at_once() -> None:
    clock = FakeClock(autojump=False)
    start = clock.monotonic()
    rate = AccountRate(1, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    went: list[tuple[str, float]] = []
    await take_turn(rate, clock, went, "first")
    second = asyncio.ensure_future(take_turn(rate, clock, went, "second"))
    third = asyncio.ensure_future(take_turn(rate, clock, went, "third"))
    await clock.until_sleeping(2)  # the second's turn at 1 s, the third's at 2 s
    second.cancel()
    clock.advance(1.0)
    await asyncio.wait_for(third, 5)
    assert [(name, at - start) for name, at in went] == [("first", 0.0), ("third", 1.0)]
