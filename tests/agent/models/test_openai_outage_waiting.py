"""Turns that wait for a model down to come back (`agent.models._outage.WaitWhenDown`): one of them sends the probe
when it is due, and once it is answered they resume a few at a time, not all at once on a server just back."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelError
from agent.models._outage import model_outage_of, waiting_when_down
from agent.testing import FakeClock, FakeOpenAIServer
from tests.agent.models.waiting import DOWN, ask, failing_then_held, on, taken_down


async def test_turns_held_resume_a_few_at_a_time_once_the_probe_is_answered():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        held = failing_then_held(server, 3)
        model = on(server, clock)
        try:
            await taken_down(model)
            circuit, told = model_outage_of(server.base_url, "m"), []

            async def turn(n: int) -> str | None:
                with waiting_when_down(600, clock, lambda left: told.append(n)):
                    return (await model.complete(ask())).text

            turns = [asyncio.create_task(turn(n)) for n in range(8)]
            await clock.until_sleeping(8, lasting=10.0)
            assert sorted(told) == list(range(8)) and len(circuit.waiting) == 8
            clock.advance(10)
            await server.wait_for(lambda: len(held) == 1)  # one probe
            assert len(circuit.waiting) == 7 and circuit.probing
            held[0].set_result(None)
            await server.wait_for(lambda: len(held) == 4)  # then three, the rest still held
            assert len(circuit.waiting) == 4 and len(held) == 4
            held[1].set_result(None)
            await server.wait_for(lambda: len(held) == 6)  # two more for each of theirs answered
            assert len(circuit.waiting) == 2
            for answer in held[2:]:
                answer.set_result(None)
            await server.wait_for(lambda: len(held) == 8)
            for answer in held[6:]:
                answer.set_result(None)
            assert await asyncio.gather(*turns) == ["ok"] * 8
            assert len(told) == 8 and not circuit.waiting
        finally:
            await model.aclose()


async def test_a_subagent_task_does_not_wait_for_its_parents_leave():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_error(503, DOWN)
        model = on(server, clock)
        try:
            await taken_down(model)
            told = []
            with waiting_when_down(600, clock, lambda left: told.append(1)):  # a task begun within is the subagent's
                with pytest.raises(ModelError, match="not sent"):
                    await asyncio.create_task(model.complete(ask()))
            assert told == []
        finally:
            await model.aclose()
