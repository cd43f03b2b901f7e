"""Property: whatever the order of ticks, holds, releases, refused sends and the turn's end, a notice's states are
numbered 0, 1, 2… with no gap, none follows `disarm`, none is sent anew while its turn waits, none repeats the one
before, and once a hold changes (or a notice is due) with the journal taking it, the notice reads what the turn does:
`HELD` while it waits, as before once released."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.testing import FakeClock
from gateway.notices import HELD, Notifier

INTERVAL = 15

ops = st.lists(st.one_of(st.tuples(st.just("advance"), st.sampled_from([1, 5, 7.5, 14, 15, 16, 30, 44.6])),
                         st.tuples(st.just("hold"), st.booleans()),
                         st.tuples(st.just("refuse"), st.booleans()),
                         st.tuples(st.just("disarm"), st.none())), max_size=25)


async def play(steps, mode) -> None:
    clock, sent, refusing = FakeClock(autojump=False), [], [False]

    def send(text: str, n: int) -> None:
        if refusing[0]:
            raise OSError("disk full")
        sent.append((text, n))

    notifier = Notifier(interval=INTERVAL, mode=mode, send=send, detail=lambda: "thinking", clock=clock)
    notifier.start()
    armed, held, ended_at = True, False, None
    await clock.until_sleeping(lasting=INTERVAL)
    try:
        for op, arg in steps:
            before = len(sent)
            if op == "advance":
                due = armed and clock.sleeping and clock._sleepers[0][0] <= clock.now + arg
                clock.advance(arg)
                if armed:
                    await clock.until_sleeping(lasting=INTERVAL)
                attempted = due and (notifier.sent or not held)
            elif op == "hold":
                attempted = armed and arg != held and notifier.sent > 0
                held = arg
                notifier.hold(arg)
            elif op == "refuse":
                refusing[0] = arg
                attempted = False
            else:
                notifier.disarm()
                armed, attempted, ended_at = False, False, len(sent)
                await asyncio.sleep(0)
            assert [n for _, n in sent] == list(range(len(sent)))
            assert all(a != b for (a, _), (b, _) in zip(sent, sent[1:]))
            if ended_at is not None:
                assert len(sent) == ended_at, "a state after disarm"
            if held and not before:
                assert not sent, "a notice sent anew while the turn waits"
            if attempted and not refusing[0] and sent:
                assert sent[-1][0].startswith(HELD) == held, (steps, sent)
    finally:
        notifier.disarm()


@settings(max_examples=300, deadline=None)
@given(steps=ops, mode=st.sampled_from([True, "generic"]))
def test_a_notice_reads_what_its_turn_does_whatever_the_order(steps, mode):
    asyncio.run(play(steps, mode))
