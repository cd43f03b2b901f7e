"""A workspace's slot (Slack's edits every 1.2 s) goes to the chats waiting for it in the order they began to wait."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from gateway.pacing import Pacer
from platforms.pacing import Pacing

SLACK = Pacing(call_interval=1.0, edit_interval=1.0, account_edit_interval=1.25)
"""Slack's pacing, its workspace's spacing of edits (1.2 s) rounded to 1.25 s: it adds up exactly in floating
point, as the tick does."""
TICK = 0.125
START = 1000.0


def chat(n: int) -> tuple[str, str, None]:
    return ("slack", f"C{n}", None)


async def take(pacer: Pacer, clock: FakeClock, n: int, preempt: asyncio.Event | None = None) -> float | None:
    """Wait for chat ``n``'s turn to edit its card, as the sender does, and edit it: when it did (None: gave up)."""
    while (pause := pacer.delay(chat(n), edit_of="m", progress=True, op="edit")) > 0:
        if not await pacer.wait(pause, preempt):
            return None
    pacer.called(chat(n), SLACK, edit_of="m", op="edit")
    return clock.monotonic() - START


async def settled(clock: FakeClock, tasks: list[asyncio.Task]) -> None:
    """Return once each of ``tasks`` not done sleeps on the clock, after a few turns of the loop: a task woken
    by an event (a preempt, a nudge) still counts as sleeping until it runs."""
    for turn in range(1000):
        await asyncio.sleep(0)
        if turn >= 10 and clock.sleeping >= sum(not task.done() for task in tasks):
            return
    raise AssertionError("the tasks never settled")


async def run_for(clock: FakeClock, seconds: float, tasks: list[asyncio.Task]) -> None:
    """Let ``seconds`` pass on the clock in ticks, each once every task not done is asleep on it."""
    for _ in range(round(seconds / TICK)):
        await settled(clock, tasks)
        clock.advance(TICK)
    await settled(clock, tasks)


async def test_ten_chats_editing_without_pause_each_get_a_turn_within_ten_slots():
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    slots: list[int] = []

    async def edit_cards(n: int) -> None:
        while True:
            await take(pacer, clock, n)
            await clock.sleep(TICK)  # the call
            pacer.called(chat(n), SLACK, edit_of="m", op="edit")
            slots.append(n)

    tasks = [asyncio.create_task(edit_cards(n)) for n in range(10)]
    try:
        await run_for(clock, 60.0, tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert len(slots) == 44  # the workspace's pace is kept: 1.25 s from each call's answer (1.375 s apart)
    for n in range(10):
        taken = [i for i, who in enumerate(slots) if who == n]
        gaps = [later - earlier for earlier, later in zip([-1, *taken], [*taken, len(slots)])]
        assert max(gaps) <= 10, f"chat {n} waited {max(gaps)} slots: {slots}"


@pytest.mark.parametrize("leaves", ["preempted", "cancelled"])
async def test_a_waiter_that_gives_up_never_holds_up_those_behind_it(leaves):
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, edit_of="m", op="edit")  # the slot is taken until 1.25
    preempt = asyncio.Event()

    async def card_then_reply() -> bool:
        # Preempted by a reply queued in its chat, which then waits a second (its chat's pace):
        # the slot it gave up is not kept for it meanwhile.
        return await take(pacer, clock, 1, preempt) is None and await pacer.wait(1.0)

    first = asyncio.create_task(card_then_reply())
    await settled(clock, [first])
    behind = asyncio.create_task(take(pacer, clock, 2))
    await settled(clock, [first, behind])
    if leaves == "preempted":
        preempt.set()
    else:
        first.cancel()  # the sender stopped
    await run_for(clock, 1.5, [first, behind])
    assert behind.result() == pytest.approx(1.25)
    assert first.cancelled() or first.result()


async def test_a_chat_held_by_a_429_of_its_own_lets_those_behind_it_go_and_then_goes_first():
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, edit_of="m", op="edit")
    pacer.block(chat(1), 5.0, progress=True)
    held = asyncio.create_task(take(pacer, clock, 1))
    await settled(clock, [held])
    behind = [asyncio.create_task(take(pacer, clock, n)) for n in range(2, 5)]
    await run_for(clock, 4.0, [held, *behind])
    assert [task.result() for task in behind] == [pytest.approx(t) for t in (1.25, 2.5, 3.75)]
    later = asyncio.create_task(take(pacer, clock, 5))  # began to wait after the held chat did
    await run_for(clock, 3.0, [held, later])
    assert held.result() == pytest.approx(5.0)
    assert later.result() == pytest.approx(6.25)


async def test_one_chat_alone_edits_at_the_workspaces_pace():
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    times: list[float] = []

    async def edit_cards() -> None:
        while True:
            times.append(await take(pacer, clock, 0))  # type: ignore[arg-type]

    task = asyncio.create_task(edit_cards())
    try:
        await run_for(clock, 5.0, [task])
    finally:
        task.cancel()
    assert times == [pytest.approx(t) for t in (0.0, 1.25, 2.5, 3.75, 5.0)]
