"""A workspace's queue for a slot (Slack's deletions, edits) stays fair and safe when its waiters misbehave: one
that gives up, fails between its turn and its answer, does not call at its turn, or asks for another op."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from gateway.pacing import Pacer
from platforms.pacing import Pacing
from tests.gateway.test_pacing_fairness import START, chat, run_for, settled, take

SLACK = Pacing(call_interval=1.0, edit_interval=1.0, account_edit_interval=1.25, account_delete_interval=1.25)


async def delete_once(pacer: Pacer, clock: FakeClock, n: int, preempt: asyncio.Event | None = None) -> float | None:
    """Delete a placeholder as the sender does: one wait for its turn, then the call (None: gave up)."""
    pause = pacer.delay(chat(n), progress=True, op="delete")
    if pause > 0 and not await pacer.wait(pause, preempt):
        return None
    pacer.called(chat(n), SLACK, op="delete")
    return clock.monotonic() - START


async def test_a_deletion_behind_a_waiter_that_gives_up_waits_for_its_turn_not_less() -> None:
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, op="delete")  # the slot is taken until 1.25
    preempt = asyncio.Event()
    first = asyncio.create_task(delete_once(pacer, clock, 1, preempt))
    await settled(clock, [first])
    behind = asyncio.create_task(delete_once(pacer, clock, 2))
    await settled(clock, [first, behind])
    preempt.set()  # the first gives its turn up: the one behind moves up to 1.25, and no sooner
    await run_for(clock, 3.0, [first, behind])
    assert first.result() is None
    assert behind.result() == pytest.approx(1.25)


@pytest.mark.parametrize("called", [True, False], ids=["after-its-call", "before-its-call"])
async def test_a_waiter_that_fails_between_its_turn_and_its_answer_holds_up_nobody(called: bool) -> None:
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, edit_of="m", op="edit")

    async def fails() -> None:
        while (pause := pacer.delay(chat(1), edit_of="m", progress=True, op="edit")) > 0:
            await pacer.wait(pause)
        if called:  # counted from its start, as the sender counts every call
            pacer.called(chat(1), SLACK, edit_of="m", op="edit")
            raise ConnectionError("the send failed before the platform answered")
        raise OSError("the store refused to journal it before the call (a full disk)")

    failing = asyncio.create_task(fails())
    await settled(clock, [failing])
    behind = [asyncio.create_task(take(pacer, clock, n)) for n in (2, 3)]
    await run_for(clock, 4.0, [failing, *behind])
    assert isinstance(failing.exception(), ConnectionError if called else OSError)
    # Its slot at 1.25 is used if it called (it may have reached the platform), never for longer; and
    # given to the next in line if it made no call.
    first = 2.5 if called else 1.25
    assert [task.result() for task in behind] == [pytest.approx(first), pytest.approx(first + 1.25)]
    later = asyncio.create_task(take(pacer, clock, 4))
    await run_for(clock, 2.0, [later])
    assert later.result() == pytest.approx(5.0 if called else 4.0)  # at once when the slot is free
    assert not pacer._queued and not pacer._queues


async def test_a_turn_woken_for_but_not_used_goes_to_the_waiter_behind_it() -> None:
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, edit_of="m", op="edit")  # the slot is taken until 1.25

    async def withdrawn() -> None:
        # As the sender does for a card withdrawn while it waited its turn: woken, it finds nothing to
        # send and goes idle, neither calling the platform nor asking the pacer again.
        while (pause := pacer.delay(chat(1), edit_of="m", progress=True, op="edit")) > 0:
            await pacer.wait(pause)
        await clock.sleep(3600.0)

    idle = asyncio.create_task(withdrawn())
    await settled(clock, [idle])
    behind = asyncio.create_task(take(pacer, clock, 2))
    try:
        await run_for(clock, 3.0, [idle, behind])
    finally:
        idle.cancel()
    assert behind.result() == pytest.approx(1.25)  # not a spacing later, after a slot nobody used
    assert not pacer._queued and not pacer._queues


async def test_a_waiter_that_asks_for_another_op_leaves_the_first_ones_queue() -> None:
    clock = FakeClock(autojump=False, start=START)
    pacer = Pacer(clock)
    pacer.called(chat(0), SLACK, edit_of="m", op="edit")
    pacer.called(chat(0), SLACK, op="delete")
    switched = asyncio.Event()

    async def edit_then_delete() -> float | None:
        pacer.delay(chat(1), edit_of="m", progress=True, op="edit")
        switched.set()
        return await delete_once(pacer, clock, 1)

    switching = asyncio.create_task(edit_then_delete())
    await switched.wait()
    behind = asyncio.create_task(take(pacer, clock, 2))
    await run_for(clock, 2.0, [switching, behind])
    assert switching.result() == pytest.approx(1.25)
    assert behind.result() == pytest.approx(1.25)  # the edit slot it left was not kept for it
    assert not pacer._queued and not pacer._queues
