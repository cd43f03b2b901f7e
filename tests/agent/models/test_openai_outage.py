"""A model server known to be down (`agent.models._outage`): after three calls in a row failed, calls are not sent,
but one now and then as a probe, without retries; the first answer ends it. The real SDK over loopback sockets, a
manual fake clock for the probes' waits."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent import ModelError
from agent._errors import server_down
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
DOWN = {"error": {"message": "upstream connect error", "type": "server_error", "param": None, "code": None}}


def model(server: FakeOpenAIServer, clock: FakeClock, *, max_retries: int = 0, name: str = "m") -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name=name, base_url=server.base_url, api_key="sk-test",
                                     max_retries=max_retries), env={}, clock=clock)


async def fails(llm: OpenAIModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async with asyncio.timeout(5):
            await llm.complete(HELLO)
    return caught.value


async def test_calls_to_a_server_that_failed_three_in_a_row_are_not_sent_but_for_a_probe(caplog):
    # Every call took its three requests: twenty chats writing through an outage sent three per message.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="back") as server:
        for _ in range(12):
            server.push_error(503, DOWN, {"retry-after-ms": "1"})
        llm = model(server, clock, max_retries=2)
        try:
            with caplog.at_level(logging.WARNING, logger="agent.models"):
                for _ in range(3):
                    assert (await fails(llm)).kind == "server_error"
                assert len(server.requests) == 9
                held = [await fails(llm) for _ in range(5)]
                assert len(server.requests) == 9  # not sent
                assert {e.kind for e in held} == {"server_error"} and all(server_down(str(e)) for e in held)
                clock.advance(10)
                probe = await fails(llm)  # one request, not three
                assert len(server.requests) == 10 and "a probe of a model server that is down" in str(probe)
                clock.advance(10)
                await fails(llm)  # twice as long now
                assert len(server.requests) == 10
                clock.advance(10)
                server.requests.clear()
                server._replies.clear()
                assert (await llm.complete(HELLO)).text == "back"
                assert (await llm.complete(HELLO)).text == "back"
                assert len(server.requests) == 2
        finally:
            await llm.aclose()
    told = [r.getMessage() for r in caplog.records if r.name == "agent.models"]
    assert len(told) == 2 and "taken for down" in told[0] and "answering again" in told[1]


async def test_a_refused_request_between_failures_shows_the_server_is_up():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for status in (503, 503, 400, 503, 503):
            server.push_error(status, DOWN)
        llm = model(server, clock)
        try:
            kinds = [(await fails(llm)).kind for _ in range(5)]
        finally:
            await llm.aclose()
    assert kinds == ["server_error", "server_error", "bad_request", "server_error", "server_error"]
    assert len(server.requests) == 5


async def test_models_on_one_server_learn_together_that_it_is_down():
    # The parent's model and delegation.model's on one server: the children's calls are held too.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_error(502, "<html><title>502 Bad Gateway</title></html>")
        parent, child = model(server, clock), model(server, clock, name="small")
        try:
            for _ in range(3):
                await fails(parent)
            error = await fails(child)
        finally:
            await parent.aclose()
            await child.aclose()
    assert len(server.requests) == 3 and server_down(str(error))


async def test_calls_failing_as_the_server_is_taken_for_down_do_not_put_its_first_probe_off():
    # Six chats' calls in flight as it went down: the three failing after it doubled the wait to a minute.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="back") as server:
        for _ in range(6):
            server.push_error(503, DOWN)
        llm = model(server, clock)
        try:
            await asyncio.gather(*(fails(llm) for _ in range(6)))
            assert server_down(str(await fails(llm)))
            clock.advance(10)
            assert (await llm.complete(HELLO)).text == "back"  # the probe, 10 s on
        finally:
            await llm.aclose()
    assert len(server.requests) == 7


async def test_a_server_error_refusing_a_request_as_too_long_is_no_outage():
    # Quoted in the error of every call held, its words had every other chat's conversation compacted.
    clock = FakeClock(autojump=False)
    too_long = {"error": {"message": "This model's maximum context length is 8192 tokens. However, you requested "
                                     "9000 tokens", "type": "internal_error", "param": None, "code": None}}
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(500, too_long)
        llm = model(server, clock)
        try:
            assert all([(await fails(llm)).context_exceeded for _ in range(3)])
            assert (await llm.complete(HELLO)).text == "fine"
        finally:
            await llm.aclose()
    assert len(server.requests) == 4
