"""A turn waiting for its model down to come back is told as it begins to wait and as its call goes again
(`agent.models._outage.WaitWhenDown`'s ``held``): the gateway pauses its "typing…" in between. Its own probes are
part of the wait: one that fails does not resume it for the time of the request."""

from __future__ import annotations

import asyncio

from agent.models._outage import waiting_when_down
from agent.testing import FakeClock, FakeOpenAIServer
from tests.agent.models.waiting import ask, failing_then_held, on, taken_down


async def test_a_turn_is_held_from_its_first_wait_until_its_call_goes_again():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        answers = failing_then_held(server, 4)
        model = on(server, clock)
        try:
            await taken_down(model)
            held: dict[str, list[bool]] = {"a": [], "b": []}

            async def turn(name: str) -> str | None:
                with waiting_when_down(600, clock, lambda left: None, held[name].append):
                    return (await model.complete(ask())).text

            first = asyncio.create_task(turn("a"))
            await clock.until_sleeping(lasting=10.0)
            assert held["a"] == [True]
            clock.advance(10)  # its probe fails: it waits 20 s more, held all along
            await server.wait_for(lambda: len(server.requests) == 4)
            await clock.until_sleeping(lasting=20.0)
            second = asyncio.create_task(turn("b"))
            await clock.until_sleeping(2, lasting=20.0)
            assert held == {"a": [True], "b": [True]}
            clock.advance(20)  # a's probe is answered: b's call goes too, as usual
            await server.wait_for(lambda: len(answers) == 1)
            assert held == {"a": [True], "b": [True]}  # the probe is still out: a waits, and so does b
            answers[0].set_result(None)
            await server.wait_for(lambda: len(answers) == 2)
            assert held == {"a": [True, False], "b": [True, False]}  # b as its call went, before its answer
            answers[1].set_result(None)
            assert await asyncio.gather(first, second) == ["ok", "ok"]
            with waiting_when_down(600, clock, lambda left: None, held["a"].append):  # up: never held
                answers.clear()
                call = asyncio.create_task(model.complete(ask()))
                await server.wait_for(lambda: answers)
                answers[0].set_result(None)
                await call
            assert held["a"] == [True, False]
        finally:
            await model.aclose()
