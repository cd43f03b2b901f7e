"""A model call in flight as a circuit opens (`agent.models._outage`, `_retry_budget.RetryBudget.refused`): a failure
in the server's own words, which shows the server answering, is asked again though the server was taken for down
meanwhile; and the call ends as a call not sent then does, whichever circuit is down by its end. The real SDK over
loopback sockets, a manual fake clock."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent._errors import server_down
from agent.testing import FakeClock, FakeOpenAIServer
from tests.agent.models.in_flight import HELLO, PROXY_PAGE, SOON, fails, held_first, model


@pytest.mark.parametrize("status", [500, 429])
async def test_a_failure_in_the_servers_own_words_after_it_was_taken_for_down_is_asked_again(status):
    # Its own answer shows the server answering (the circuit closes with it): it was not asked again, and the chat
    # read "try again in a moment" for a failure a retry would have mended.
    clock = FakeClock(autojump=False)
    gate, waiting, first_held = held_first()
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(502, PROXY_PAGE, SOON)
        server.respond_with(first_held)
        slow, others = model(server, clock, max_retries=2), model(server, clock, max_retries=0)
        try:
            in_flight = asyncio.create_task(slow.complete(HELLO))
            await server.wait_for(lambda: bool(waiting))
            for _ in range(3):
                await fails(others)
            server.push_error(status, None, SOON)  # the slow call's first request's: the server's JSON
            gate.set()
            async with asyncio.timeout(5):
                answer = await in_flight
        finally:
            await slow.aclose()
            await others.aclose()
    assert answer.text == "fine" and len(server.requests) == 5


async def test_a_call_refused_by_its_keys_limit_ends_as_the_server_down_its_own_failure_took_for_down():
    # Held by its key's 429s as its first request failed, its failure the third in a row the server did not answer:
    # a call then is not sent as the server is down, but this one's chat read the key's "try again in a moment".
    clock = FakeClock(autojump=False)
    gate, waiting, first_held = held_first()
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(429, None, SOON)
        for _ in range(2):
            server.push_error(502, PROXY_PAGE, SOON)
        server.respond_with(first_held)
        slow, others = model(server, clock, max_retries=2), model(server, clock, max_retries=0)
        other_model = model(server, clock, max_retries=0, name="m2")  # the server's, not the key's
        try:
            in_flight = asyncio.create_task(fails(slow))
            await server.wait_for(lambda: bool(waiting))
            for _ in range(3):
                assert (await fails(others)).kind == "rate_limited"
            for _ in range(2):
                await fails(other_model)
            server.push_error(502, PROXY_PAGE, SOON)
            gate.set()
            error = await in_flight
            fresh = await fails(others)  # not sent: the server is down
        finally:
            await slow.aclose()
            await others.aclose()
            await other_model.aclose()
    assert server_down(str(fresh)) and fresh.kind == "server_error"
    assert len(server.requests) == 6
    assert server_down(str(error)) and error.kind == fresh.kind


async def test_calls_in_flight_told_the_server_is_down_are_counted_as_not_sent(caplog):
    # Their chats read "unreachable", and the gateway leaves each such turn out of its log for the outage's two lines:
    # the second said "0 model calls were not sent" though two chats had been told so.
    clock = FakeClock(autojump=False)
    gate, waiting, first_held = held_first()
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(502, PROXY_PAGE, SOON)
        server.respond_with(first_held)
        slow, others = model(server, clock, max_retries=2), model(server, clock, max_retries=0)
        try:
            with caplog.at_level(logging.WARNING, logger="agent.models"):
                in_flight = asyncio.create_task(fails(slow))
                await server.wait_for(lambda: bool(waiting))
                for _ in range(3):
                    await fails(others)
                server.push_error(502, PROXY_PAGE, SOON)
                gate.set()
                assert server_down(str(await in_flight))
                assert server_down(str(await fails(others)))  # not sent
                clock.advance(10)
                assert (await others.complete(HELLO)).text == "fine"  # the probe
        finally:
            await slow.aclose()
            await others.aclose()
    (ended,) = [r.getMessage() for r in caplog.records if "answering again" in r.getMessage()]
    assert ended.endswith("; 2 model calls were not sent to it meanwhile")
