"""`platforms.pacing.AccountRate`: a write that gives way (`GIVES_WAY`, a progress card's) goes after every
other write waiting, and a caller that stops waiting gives its turn to those behind it. On a manual fake
clock: time moves only when the test says so."""

from __future__ import annotations

import asyncio

from agent.testing.clock import FakeClock
from platforms.pacing import GIVE_WAY_MOST, GIVES_WAY, AccountRate


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


async def test_a_waiter_goes_at_its_turn_however_late_the_loop_starts_its_sleep() -> None:
    """Its turn is a time, not a length: the loop busy elsewhere between the caller working out its wait and the
    sleep starting (a quarter second here) made it sleep that much past its turn, the slot left unused."""
    clock = FakeClock(autojump=False)
    start = clock.monotonic()
    rate = AccountRate(1, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    went: list[tuple[str, float]] = []
    await take_turn(rate, clock, went, "first")
    second = asyncio.ensure_future(take_turn(rate, clock, went, "second"))
    asyncio.get_running_loop().call_soon(clock.advance, 0.25)  # other work, once the second asked
    await clock.until_sleeping(1)
    clock.advance(0.75)  # its turn
    for _ in range(20):
        await asyncio.sleep(0)
    assert [(name, at - start) for name, at in went] == [("first", 0.0), ("second", 1.0)]
    await asyncio.wait_for(second, 5)


async def test_a_write_giving_way_goes_within_its_bound_while_answers_keep_coming() -> None:
    """Answers at the account's rate without end held an edit back without end, and its own chat's answer, queued
    behind it in the chat's order, with it: after `GIVE_WAY_MOST` rounds it queues as any other write."""
    clock = FakeClock(autojump=False)
    start = clock.monotonic()
    rate = AccountRate(1, 1.0, clock=clock.monotonic, sleep=clock.sleep)
    went: list[tuple[str, float]] = []
    await take_turn(rate, clock, went, "answer 0")
    edit = asyncio.ensure_future(take_turn(rate, clock, went, "edit", gives_way=True))
    answers = [asyncio.ensure_future(take_turn(rate, clock, went, "answer 1"))]
    for n in range(2, 12):
        await clock.until_sleeping(2)
        clock.advance(1.0)
        for _ in range(20):
            await asyncio.sleep(0)
        answers.append(asyncio.ensure_future(take_turn(rate, clock, went, f"answer {n}")))
    while not edit.done() or not all(a.done() for a in answers):
        clock.advance(1.0)
        for _ in range(20):
            await asyncio.sleep(0)
    edit_at = dict(went)["edit"] - start
    assert edit_at <= GIVE_WAY_MOST + 2, went
    assert len({at for _, at in went}) == len(went)  # one a second all the same
