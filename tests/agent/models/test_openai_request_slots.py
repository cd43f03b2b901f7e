"""``model.max_concurrent_requests``: at most that many requests in flight to one server at once, the rest waiting
their turn before their timeout starts (`agent.models._request_slots`). The real SDK over loopback sockets."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models._request_slots import _SHARED, RequestSlots
from agent.models._retry_budget import RetryBudget, begin
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

UNUSED = "http://127.0.0.1:1/v1"


def ask(text: str) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}])


def model_for(server: FakeOpenAIServer, bound: int | None, **settings) -> OpenAIModel:
    settings = {"name": "m", "max_retries": 0, **settings}
    return OpenAIModel(ModelSettings(provider="openai", base_url=server.base_url, api_key="sk-test",
                                     max_concurrent_requests=bound, **settings), env={})


async def waiting_for_a_slot(server: str, count: int) -> None:
    """Return once ``count`` requests wait for one of ``server``'s slots (a bound of 1)."""
    slots = _SHARED[asyncio.get_running_loop()][(server, 1)]
    async with asyncio.timeout(5):
        while len(slots._waiters or ()) < count:
            await asyncio.sleep(0)


class Gated:
    """A responder holding each request until the test lets one through, counting those in flight."""

    def __init__(self) -> None:
        self.in_flight = self.most = 0
        self.gate: asyncio.Queue[None] = asyncio.Queue()

    async def __call__(self, body):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await self.gate.get()
        finally:
            self.in_flight -= 1
        return {"text": f"answer to {body['messages'][-1]['content']}"}


async def test_twenty_calls_with_a_bound_of_two_never_have_more_than_two_in_flight():
    async with FakeOpenAIServer() as server:
        gated = Gated()
        server.respond_with(gated)
        model = model_for(server, 2)
        try:
            calls = [asyncio.create_task(model.complete(ask(f"q{i}"))) for i in range(20)]
            for let_through in range(20):
                # The next waiting call takes the slot each answer frees; an unbounded client sent all 20 at once.
                await server.wait_for(lambda n=let_through: len(server.requests) >= min(n + 2, 20))
                gated.gate.put_nowait(None)
            answers = await asyncio.gather(*calls)
        finally:
            await model.aclose()
    assert gated.most == 2
    assert [answer.text for answer in answers] == [f"answer to q{i}" for i in range(20)]
    # First come first served: each call took a slot in the order made (two sent together may arrive swapped).
    sent = [int(body["messages"][-1]["content"][1:]) for body in server.requests]
    assert all(abs(at - call) <= 1 for at, call in enumerate(sent))


async def test_a_call_waiting_for_a_slot_is_not_timed_out_by_the_wait():
    # A server answering one request at a time, each in 50 ms: eight calls at once took 400 ms, and those sent
    # at once waited on its side past a 250 ms timeout. Waiting for a slot here, each request takes 50 ms.
    one_at_a_time = asyncio.Lock()

    async def serially(body):
        async with one_at_a_time:
            await asyncio.sleep(0.05)
        return {"text": "answered"}

    async with FakeOpenAIServer() as server:
        server.respond_with(serially)
        model = model_for(server, 1, timeout_seconds=0.25)
        try:
            answers = await asyncio.gather(*(model.complete(ask(f"q{i}")) for i in range(8)), return_exceptions=True)
        finally:
            await model.aclose()
    assert [getattr(answer, "text", answer) for answer in answers] == ["answered"] * 8


async def test_a_cancelled_waiting_call_frees_no_slot_and_a_cancelled_sent_one_frees_its_own():
    async with FakeOpenAIServer() as server:
        gated = Gated()
        server.respond_with(lambda body: None if body["messages"][-1]["content"] == "probe" else gated(body))
        model, probe = model_for(server, 1), model_for(server, None)
        try:
            first = asyncio.create_task(model.complete(ask("first")))
            await server.wait_for(lambda: len(server.requests) == 1)
            waiting = asyncio.create_task(model.complete(ask("waiting")))
            later = asyncio.create_task(model.complete(ask("later")))
            await waiting_for_a_slot(server.base_url, 2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            # A round trip of an unbounded client: time enough for "later" to be sent, had the cancel freed a slot.
            assert (await probe.complete(ask("probe"))).text == "ok"
            assert [body["messages"][-1]["content"] for body in server.requests] == ["first", "probe"]
            first.cancel()  # sent: its slot is freed, and "later" takes it
            with pytest.raises(asyncio.CancelledError):
                await first
            await server.wait_for(lambda: len(server.requests) == 3)
            gated.gate.put_nowait(None)
            assert (await later).text == "answer to later"
        finally:
            await model.aclose()
            await probe.aclose()
    assert gated.most == 1
    assert [body["messages"][-1]["content"] for body in server.requests] == ["first", "probe", "later"]


async def test_a_call_waiting_to_ask_again_holds_no_slot():
    async with FakeOpenAIServer() as server:
        server.push_error(503, headers={"retry-after": "30"})
        model = model_for(server, 1, max_retries=1)
        try:
            retrying = asyncio.create_task(model.complete(ask("busy")))
            await server.wait_for(lambda: len(server.requests) == 1)
            # Sent while the first call waits its 30 s before asking again.
            assert (await model.complete(ask("meanwhile"))).text == "ok"
            retrying.cancel()
            with pytest.raises(asyncio.CancelledError):
                await retrying
        finally:
            await model.aclose()
    assert [body["messages"][-1]["content"] for body in server.requests] == ["busy", "meanwhile"]


async def test_models_of_one_server_share_its_slots_and_another_servers_have_their_own():
    # The parent's model and delegation.model's (another name, the same server) hold the bound between them.
    async with FakeOpenAIServer() as server, FakeOpenAIServer() as other:
        gated, elsewhere = Gated(), Gated()
        server.respond_with(gated)
        other.respond_with(elsewhere)
        parent, child, away = model_for(server, 1), model_for(server, 1, name="small"), model_for(other, 1)
        try:
            calls = [asyncio.create_task(parent.complete(ask("parent"))),
                     asyncio.create_task(child.complete(ask("child"))),
                     asyncio.create_task(away.complete(ask("away")))]
            await server.wait_for(lambda: len(server.requests) == 1)
            await other.wait_for(lambda: len(other.requests) == 1)  # not held up by the first server's slot
            gated.gate.put_nowait(None)
            await server.wait_for(lambda: len(server.requests) == 2)
            gated.gate.put_nowait(None)
            elsewhere.gate.put_nowait(None)
            assert [answer.text for answer in await asyncio.gather(*calls)] == [
                "answer to parent", "answer to child", "answer to away"]
        finally:
            for model in (parent, child, away):
                await model.aclose()
    assert gated.most == 1 and elsewhere.most == 1


async def test_no_bound_by_default():
    async with FakeOpenAIServer() as server:
        gated = Gated()
        server.respond_with(gated)
        model = model_for(server, None)
        try:
            calls = [asyncio.create_task(model.complete(ask(f"q{i}"))) for i in range(5)]
            await server.wait_for(lambda: len(server.requests) == 5)
            for _ in calls:
                gated.gate.put_nowait(None)
            await asyncio.gather(*calls)
        finally:
            await model.aclose()
    assert gated.most == 5


async def test_the_wait_for_a_slot_does_not_count_against_the_calls_retry_budget():
    # A retry that waits 100 s of the clock for its slot keeps the whole of its call's two minutes of retrying.
    clock = FakeClock(autojump=False)
    slots = RequestSlots(UNUSED, 1)
    budget = RetryBudget()
    begin(budget, clock)
    until = budget.until
    holding, freed = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with slots.held(None, clock):
            holding.set()
            await freed.wait()

    holder = asyncio.create_task(hold())
    await holding.wait()
    waited = asyncio.Event()

    async def retry() -> None:
        async with slots.held(budget, clock):
            waited.set()

    retrying = asyncio.create_task(retry())
    await waiting_for_a_slot(UNUSED, 1)
    clock.advance(100.0)
    freed.set()
    await asyncio.gather(holder, retrying)
    assert waited.is_set() and budget.until == until + 100.0


def test_a_bound_below_one_is_refused():
    with pytest.raises(ValueError, match="1 or more"):
        RequestSlots(UNUSED, 0)


async def test_a_call_still_fails_as_before_when_its_own_request_times_out():
    async with FakeOpenAIServer() as server:
        server.push_hang()
        model = model_for(server, 1, timeout_seconds=0.05)
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ask("slow"))
            server.push_text("next")
            assert (await model.complete(ask("again"))).text == "next"  # the timed-out request freed its slot
        finally:
            await model.aclose()
    assert caught.value.kind == "timeout"
