"""A model call already in flight as its server is taken for down (`agent.models._outage`) is asked again no more: its
next attempt ends at once as the circuit's refusal, as a call not sent does. The real SDK over loopback sockets, a
manual fake clock for the probes' waits."""

from __future__ import annotations

import asyncio

from agent._errors import server_down
from agent.models._request_slots import RequestSlots
from agent.testing import FakeClock, FakeOpenAIServer
from tests.agent.models.in_flight import HELLO, PROXY_PAGE, SOON, fails, held_first, model


async def test_a_call_whose_failure_comes_after_the_server_was_taken_for_down_is_not_asked_again():
    # Twenty chats waiting on a server as it went down: each took all its retries once the circuit had opened, and
    # its chat waited through them all to read "try again in a moment".
    clock = FakeClock(autojump=False)
    gate, waiting, first_held = held_first()

    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(6):
            server.push_error(502, PROXY_PAGE, SOON)
        server.respond_with(first_held)
        slow, others = model(server, clock, max_retries=2), model(server, clock, max_retries=0)
        try:
            in_flight = asyncio.create_task(fails(slow))
            await server.wait_for(lambda: bool(waiting))
            for _ in range(3):
                assert not server_down(str(await fails(others)))
            gate.set()
            error = await in_flight
        finally:
            await slow.aclose()
            await others.aclose()
    assert len(server.requests) == 4  # its first request alone, no retry
    assert error.kind == "server_error" and server_down(str(error)) and "502 Bad Gateway" in str(error)


async def test_a_call_waiting_to_ask_again_as_the_server_is_taken_for_down_sends_nothing_more():
    # Its retry waited for a request slot (`model.max_concurrent_requests`) while three other calls failed.
    clock = FakeClock(autojump=False)
    gate, waiting, first_held = held_first()

    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(6):
            server.push_error(502, PROXY_PAGE, SOON)
        server.respond_with(first_held)
        slow = model(server, clock, max_retries=2, max_concurrent_requests=1)
        others = model(server, clock, max_retries=0, max_concurrent_requests=1)
        try:
            in_flight = asyncio.create_task(fails(slow))
            await server.wait_for(lambda: bool(waiting))
            queued = [asyncio.create_task(fails(others)) for _ in range(3)]  # behind the slow call's request
            slots = RequestSlots(server.base_url, 1)._semaphore()
            async with asyncio.timeout(5):
                while len(slots._waiters or ()) < 3:  # each waits for the slot: no event tells it
                    await asyncio.sleep(0)
            gate.set()  # its 502; its retry queues behind the three
            error = await in_flight
            told = await asyncio.gather(*queued)
        finally:
            await slow.aclose()
            await others.aclose()
    assert len(server.requests) == 4
    assert not any(server_down(str(e)) for e in told)
    assert error.kind == "server_error" and server_down(str(error))


async def test_a_probe_answered_while_a_call_waits_to_ask_again_lets_it_ask():
    # The circuit closed again before the retry: it is sent, and answered.
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
            clock.advance(10)
            assert (await others.complete(HELLO)).text == "fine"  # the probe: the server is up
            server.push_error(502, PROXY_PAGE, SOON)  # the slow call's first request's
            gate.set()
            async with asyncio.timeout(5):
                answer = await in_flight
        finally:
            await slow.aclose()
            await others.aclose()
    assert answer.text == "fine" and len(server.requests) == 6
