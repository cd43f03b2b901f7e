"""Properties of `platforms.pacing.AccountRate` under random arrivals of answers and of writes that give way
(`GIVES_WAY`), and random cancellations, on a manual fake clock moved from one event to the next: never more
than ``count`` calls in any ``per`` seconds; nobody waits while the window has room (no lost wakeup); an answer
never goes after a write that gives way and came later, nor after an answer that came later. A write that steps
aside (`STEPS_ASIDE`) leaves at once when its chat's answer is queued, never going, and gives its place up."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.testing.clock import FakeClock
from platforms.pacing import GIVE_WAY_MOST, GIVES_WAY, STEPS_ASIDE, AccountRate, SteppedAside

STEP = 0.125  # exact in binary: the fake times compare without rounding
PER = 1.0

events = st.lists(
    st.tuples(st.integers(0, 12), st.sampled_from(["answer", "gives way", "cancel"]), st.integers(0, 1000)),
    min_size=1, max_size=40)
stepping = st.lists(
    st.tuples(st.integers(0, 12), st.sampled_from(["answer", "gives way", "cancel", "steps aside", "its answer"]),
              st.integers(0, 1000)),
    min_size=1, max_size=40)


async def settle() -> None:
    loop = asyncio.get_running_loop()
    for _ in range(400):
        await asyncio.sleep(0)
        if not loop._ready:  # type: ignore[attr-defined]
            await asyncio.sleep(0)
            if not loop._ready:  # type: ignore[attr-defined]
                return


async def run(count: int, script: list[tuple[int, str, int]]) -> None:
    clock = FakeClock(autojump=False, start=0.0)
    rate = AccountRate(count, PER, clock=clock.monotonic, sleep=clock.sleep)
    callers: list[dict] = []
    ticks = itertools.count()  # one order for arrivals and goings alike

    async def caller(me: dict) -> None:
        GIVES_WAY.set(me["gives way"])
        STEPS_ASIDE.set(me.get("aside"))
        try:
            await rate.turn()
        except SteppedAside:
            me["stepped aside"] = clock.monotonic()
            assert me["aside"].is_set()
            raise
        me["went"] = clock.monotonic()
        me["order"] = next(ticks)

    def waiting() -> list[dict]:
        return [c for c in callers if "went" not in c and not c["task"].done()]

    at, timeline = 0.0, []  # each event comes a gap after the one before it
    for gap, kind, which in script:
        at += gap * STEP
        timeline.append((at, kind, which))
    while timeline or waiting():
        deadlines = [s[0] for s in clock._sleepers if not s[2].done()]
        nxt = min([t for t, _, _ in timeline[:1]] + deadlines, default=None)
        assert nxt is not None, f"callers wait with nothing to wake them at {clock.now}: {waiting()}"
        if nxt > clock.now:
            clock.advance(nxt - clock.now)
        await settle()
        while timeline and timeline[0][0] <= clock.now:
            _, kind, which = timeline.pop(0)
            if kind == "cancel":
                if waiting():
                    victim = waiting()[which % len(waiting())]
                    victim["task"].cancel()
                    victim["cancelled"] = True
            elif kind == "its answer":  # the chat of a write that steps aside has an answer queued
                if asides := [c for c in waiting() if "aside" in c and not c["aside"].is_set()]:
                    chosen = asides[which % len(asides)]
                    chosen["aside"].set()
                    chosen["answered at"] = clock.now
            else:
                me = {"gives way": kind != "answer", "came": clock.now, "seq": len(callers), "tick": next(ticks)}
                if kind == "steps aside":
                    me["aside"] = asyncio.Event()
                callers.append(me)
                me["task"] = asyncio.ensure_future(caller(me))
            await settle()
        await settle()
        now = clock.now
        for c in callers:  # its answer queued while it waited: it left at once, not going
            if "answered at" in c and ("went" not in c or c["went"] > c["answered at"]):
                assert c["task"].done() and c.get("stepped aside") == c["answered at"], c
        went = sorted(c["went"] for c in callers if "went" in c)
        # No lost wakeup: with someone waiting, the window is full.
        if waiting():
            assert sum(1 for t in went if t > now - PER) >= count, (
                f"at {now} callers wait though the window has room: went {went}")
        # An answer waiting: nobody went since it came but answers that came before it, and writes giving way
        # that had waited their bound (`GIVE_WAY_MOST` rounds) before it came: they queue as any other then.
        for late in waiting():
            if late["gives way"]:
                continue
            for other in callers:
                bound_before = other["gives way"] and other["came"] + GIVE_WAY_MOST * PER <= late["came"]
                if "went" in other and other["order"] > late["tick"] and not bound_before and (
                        other["gives way"] or other["seq"] > late["seq"]):
                    raise AssertionError(f"{other} went while the answer {late} waited")
    await settle()
    times = sorted(c["went"] for c in callers if "went" in c)
    for i in range(count, len(times)):
        assert times[i] - times[i - count] >= PER, f"more than {count} calls in {PER} s: {times}"
    for c in callers:
        assert "went" in c or c.get("cancelled") or "stepped aside" in c, c
        if "went" in c:
            assert c["went"] >= c["came"]


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(count=st.integers(1, 4), script=events)
def test_account_rate_keeps_its_window_wakes_every_waiter_and_puts_answers_first(count, script) -> None:
    asyncio.run(run(count, script))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(count=st.integers(1, 4), script=stepping)
def test_a_write_stepping_aside_leaves_at_once_and_keeps_the_window_and_the_order(count, script) -> None:
    asyncio.run(run(count, script))
