"""A call made once its server is back while the turns held through the outage still resume a few at a time
(`agent.models._outage.ServerOutage.release`) waits its turn behind them, first come first served: sent at once, the
message of minute 9 was answered before that of minute 1."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from agent import ModelError
from agent._errors import NOT_SENT
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models._outage import ServerOutage, model_outage_of, waiting_when_down
from agent.testing import FakeClock, FakeOpenAIServer
from gateway.replies import MODEL_DOWN_WAITING, down_waiting_text
from tests.agent.models.waiting import on, taken_down

UPSTREAM_200 = {"error": {"message": "Upstream error from the provider", "code": 502}}  # OpenRouter's, in a 200 body


def said(text: str) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}])


def sent(server: FakeOpenAIServer) -> list[str]:
    return [request["messages"][-1]["content"] for request in server.requests]


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not predicate():
            await asyncio.sleep(0.005)


class Outage:
    """Model ``m`` taken for down by three failures; then each call is held until the test answers it
    (`answer`): with its own words, or failing as the three did."""

    def __init__(self, server: FakeOpenAIServer, clock: FakeClock) -> None:
        self.server, self.clock = server, clock
        self.held: list[asyncio.Future[bool]] = []
        for _ in range(3):
            server.push_raw(UPSTREAM_200)
        server.respond_with(self._play)
        self.model: OpenAIModel = on(server, clock)
        self.turns: list[asyncio.Task[str]] = []
        self.others: list[asyncio.Task] = []

    async def _play(self, body):
        if len(self.server.requests) <= 3:
            return None
        self.held.append(answer := asyncio.get_running_loop().create_future())
        if await answer:
            return {"text": body["messages"][-1]["content"]}
        self.server.push_raw(UPSTREAM_200)
        return None

    def answer(self, n: int, *, fails: bool = False) -> None:
        self.held[n].set_result(not fails)

    async def turn(self, text: str, *, seconds: float = 600, told: Callable[[float], object] = lambda left: None,
                   held: Callable[[bool], object] = lambda holding: None) -> str:
        with waiting_when_down(seconds, self.clock, told, held):
            return (await self.model.complete(said(text))).text or ""

    def start(self, text: str, **waits) -> asyncio.Task[str]:
        """A turn of ``text`` under way (``waits``: as `turn`'s), stopped at the end of the test if not done."""
        self.others.append(task := asyncio.create_task(self.turn(text, **waits)))
        return task

    async def resuming(self) -> ServerOutage:
        """Six turns held; the probe, one's, answered: three more resumed, two still waiting."""
        await taken_down(self.model)
        circuit = model_outage_of(self.server.base_url, "m")
        self.turns = [asyncio.create_task(self.turn(f"early {n}")) for n in range(6)]
        await self.clock.until_sleeping(6, lasting=10.0)
        self.clock.advance(10)
        await self.server.wait_for(lambda: len(self.held) == 1)
        self.answer(0)
        await self.server.wait_for(lambda: len(self.held) == 4)
        assert len(circuit.waiting) == 2
        return circuit

    async def aclose(self) -> None:
        for answer in self.held:
            if not answer.done():
                answer.set_result(True)
        for task in (*self.turns, *self.others):
            task.cancel()
        await asyncio.gather(*self.turns, *self.others, return_exceptions=True)
        await self.model.aclose()


async def test_a_message_once_the_server_is_back_is_sent_after_those_that_waited_and_all_are_answered():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            late = outage.start("late")
            await until(lambda: len(circuit.waiting) == 3)  # behind the two still held
            outage.answer(1)  # two more resume: those two
            await server.wait_for(lambda: len(outage.held) == 6)
            assert "late" not in sent(server) and len(circuit.waiting) == 1
            outage.answer(2)  # its place came
            await server.wait_for(lambda: len(outage.held) == 7)
            assert sent(server)[-1] == "late" and not circuit.waiting
            for n in range(3, 7):
                outage.answer(n)
            assert await asyncio.wait_for(late, 5) == "late"
            assert sorted(await asyncio.gather(*outage.turns)) == [f"early {n}" for n in range(6)]
            # None waits any more: a call goes at once, as before the outage.
            after = outage.start("after", seconds=0)
            await server.wait_for(lambda: len(outage.held) == 8)
            outage.answer(7)
            assert await asyncio.wait_for(after, 5) == "after"
            assert len(server.requests) == 3 + 6 + 1 + 1
        finally:
            await outage.aclose()


async def test_a_call_that_may_not_wait_waits_its_turn_and_fails_unsent_if_the_model_goes_down_again():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            # A subagent's call, or a results turn's: not sent ahead of the turns held, nor fails for them.
            quick = asyncio.create_task(outage.model.complete(said("no wait")))
            outage.others.append(quick)
            await until(lambda: len(circuit.waiting) == 3)
            for n in (1, 2, 3):  # the three resumed fail: the model is taken for down again
                outage.answer(n, fails=True)
            with pytest.raises(ModelError, match=NOT_SENT):
                await asyncio.wait_for(quick, 5)
            assert circuit.down_since is not None and "no wait" not in sent(server)
        finally:
            await outage.aclose()


async def test_a_call_stopped_while_behind_leaves_no_place_and_the_others_go_on():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            late = outage.start("late")
            await until(lambda: len(circuit.waiting) == 3)
            late.cancel()  # /stop
            with pytest.raises(asyncio.CancelledError):
                await late
            assert len(circuit.waiting) == 2
            for n in (1, 2, 3):
                outage.answer(n)
            await server.wait_for(lambda: len(outage.held) == 6)
            outage.answer(4)
            outage.answer(5)
            assert sorted(await asyncio.wait_for(asyncio.gather(*outage.turns), 5)) == [
                f"early {n}" for n in range(6)]
            assert not circuit.waiting and "late" not in sent(server)
        finally:
            await outage.aclose()


async def test_a_turn_behind_goes_once_its_wait_is_over_untold_as_the_server_is_up():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            told, held = [], []
            late = outage.start("late", seconds=7, told=lambda left: told.append(1), held=held.append)
            await clock.until_sleeping(lasting=7.0)
            assert len(circuit.waiting) == 3 and "late" not in sent(server)
            clock.advance(7)  # waited behind as long as it may wait: it is not held longer
            await server.wait_for(lambda: "late" in sent(server))
            assert len(circuit.waiting) == 2 and told == [] and held == []
            outage.answer(len(outage.held) - 1)
            assert await asyncio.wait_for(late, 5) == "late"
        finally:
            await outage.aclose()


async def test_a_turn_behind_is_told_and_held_with_the_others_once_the_model_goes_down_again():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            told, held = [], []
            late = outage.start("late", told=lambda left: told.append(1), held=held.append)
            await until(lambda: len(circuit.waiting) == 3)
            assert told == [] and held == []  # the server is up: nobody tells it unreachable
            for n in (1, 2, 3):
                outage.answer(n, fails=True)
            await until(lambda: circuit.down_since is not None and held == [True])
            assert told == [1] and not late.done() and "late" not in sent(server)
        finally:
            await outage.aclose()


async def test_a_turn_held_stopped_as_the_others_resume_lets_none_go_in_its_stead():
    # Stopped before its place came, it holds none: one more let go at its end had the server asked by one more.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            stopped, left = (turn for n, turn in enumerate(outage.turns) if f"early {n}" not in sent(server))
            stopped.cancel()  # /stop
            with pytest.raises(asyncio.CancelledError):
                await stopped
            assert len(circuit.waiting) == 1 and len(server.requests) == 3 + 4
            outage.answer(1)  # its place comes only now
            await server.wait_for(lambda: len(outage.held) == 5)
            for n in (2, 3, 4):
                outage.answer(n)
            assert await asyncio.wait_for(left, 5) in {f"early {n}" for n in range(6)}
            assert not circuit.waiting and len(server.requests) == 3 + 5
        finally:
            await outage.aclose()


async def test_a_turn_that_had_its_place_sends_its_next_call_at_once():
    # Its tool's result sent on is the same message's answer: behind the messages of minute 9 it went last again.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()

            async def two_calls() -> tuple[str | None, str | None]:
                with waiting_when_down(600, clock, lambda left: None):
                    first = await outage.model.complete(said("late"))
                    return first.text, (await outage.model.complete(said("late again"))).text

            late = asyncio.create_task(two_calls())
            outage.others.append(late)
            await until(lambda: len(circuit.waiting) == 3)
            for n in range(4):
                outage.start(f"later {n}")
                await until(lambda: len(circuit.waiting) == 4 + n)
            outage.answer(1)  # the two held before it go
            outage.answer(2)  # then it, and "later 0"
            await server.wait_for(lambda: "late" in sent(server) and len(outage.held) == 8)
            outage.answer(sent(server).index("late") - 3)  # "later 1" and "later 2" go: "later 3" waits
            await server.wait_for(lambda: "late again" in sent(server))
            assert len(circuit.waiting) == 1 and "later 3" not in sent(server)
            outage.answer(len(outage.held) - 1)
            assert await asyncio.wait_for(late, 5) == ("late", "late again")
        finally:
            await outage.aclose()


async def test_a_turn_that_waited_behind_longer_ago_than_its_wait_is_not_told_it_waits_as_the_model_goes_down():
    # Its wait runs from its first, behind the turns held: past it, its call fails at once, and its chat read first
    # that its message waits for the model to come back.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            told, go_on = [], asyncio.get_running_loop().create_future()

            async def two_calls() -> str | None:
                with waiting_when_down(600, clock, lambda left: told.append(1)):
                    await outage.model.complete(said("late"))
                    await go_on  # its tools run
                    return (await outage.model.complete(said("late again"))).text

            late = asyncio.create_task(two_calls())
            outage.others.append(late)
            await until(lambda: len(circuit.waiting) == 3)
            outage.answer(1)
            outage.answer(2)  # its place came
            await server.wait_for(lambda: "late" in sent(server))
            outage.answer(sent(server).index("late") - 3)
            clock.advance(601)
            for n in range(len(outage.held)):
                if not outage.held[n].done():
                    outage.answer(n, fails=True)  # the model is taken for down again
            await until(lambda: circuit.down_since is not None)
            go_on.set_result(None)
            with pytest.raises(ModelError, match=NOT_SENT):
                await asyncio.wait_for(late, 5)
            assert told == [] and "late again" not in sent(server)
        finally:
            await outage.aclose()


async def test_a_turn_told_it_waits_as_the_model_goes_down_while_it_is_behind_is_told_the_time_it_has_left():
    # Told "waiting up to 10 minutes" once the model went down after 9 min 52 s behind the turns held, it failed
    # eight seconds later: its wait runs from its first, behind them, and so does what it is told.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            circuit = await outage.resuming()
            told: list[float] = []
            late = outage.start("late", told=told.append)
            await until(lambda: len(circuit.waiting) == 3)
            clock.advance(592)  # the two still held before it go, as long as they may wait: it waits on
            await server.wait_for(lambda: len(outage.held) == 6)
            assert len(circuit.waiting) == 1
            for n in range(1, 6):
                outage.answer(n, fails=True)  # the model is taken for down again
            await until(lambda: len(told) == 1)
            assert told == [pytest.approx(8)]
            assert down_waiting_text(told[0]) == MODEL_DOWN_WAITING.format(wait="8 seconds")
            await clock.until_sleeping(lasting=8.0)
            clock.advance(8)  # as long as it was told
            with pytest.raises(ModelError, match=NOT_SENT):
                await asyncio.wait_for(late, 5)
        finally:
            await outage.aclose()


async def test_a_turn_that_waits_first_for_the_model_down_is_told_its_whole_wait():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        outage = Outage(server, clock)
        try:
            await taken_down(outage.model)
            told: list[float] = []
            outage.start("first", told=told.append)
            await until(lambda: len(told) == 1)
            assert told == [600] and down_waiting_text(told[0]) == MODEL_DOWN_WAITING.format(wait="10 minutes")
        finally:
            await outage.aclose()
