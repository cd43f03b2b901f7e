"""A turn waiting for its server down (`agent.models._outage.WaitWhenDown`) whose probe told nothing (a proxy's 504:
`UNTOLD`, the next probe due at once) is not sent again and again: it ends as such a probe did before."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models._outage import model_outage_of, outage_of, waiting_when_down
from agent.testing import FakeClock, FakeOpenAIServer
from tests.agent.models.waiting import ask, on, taken_down

PAGE = "<html><title>502 Bad Gateway</title></html>"  # a proxy's: the server behind is not answering
GAVE_UP = "<html><title>504 Gateway Time-out</title></html>"  # a proxy that stopped waiting: tells nothing


async def test_a_probe_a_proxy_gave_up_on_is_not_sent_again_at_once_and_again():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_error(502, PAGE)
        model = on(server, clock)
        try:
            await taken_down(model)
            assert outage_of(server.base_url).down_since is not None

            def gave_up(body):
                server.push_error(504, GAVE_UP)

            server.respond_with(gave_up)

            async def turn():
                with waiting_when_down(15, clock, lambda left: None):
                    return await model.complete(ask())

            task = asyncio.create_task(turn())
            await clock.until_sleeping(lasting=10.0)
            clock.advance(10)  # the probe is due: this turn sends it, and the proxy gives up on it
            await server.wait_for(lambda: len(server.requests) == 4)
            for _ in range(50):
                await asyncio.sleep(0.01)
            # It sent 300 more in half a second, the clock standing still, and would have to the end of time.
            assert len(server.requests) == 4
            with pytest.raises(ModelError, match="504"):  # it ends as such a probe did before it could wait
                await asyncio.wait_for(task, 5)
        finally:
            await model.aclose()


UPSTREAM_200 = {"error": {"message": "Upstream error from the provider", "code": 502}}  # OpenRouter's, in a 200 body


async def test_a_probe_failing_in_a_200_body_goes_on_waiting_as_a_503_does():
    # OpenRouter commits to 200 before the upstream model runs: its failure rides the body (`_to_response`). A probe
    # failing so ended its turn at once, its chat told "try again in a moment", minutes of its wait left.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="back") as server:
        for _ in range(4):
            server.push_raw(UPSTREAM_200)
        model = on(server, clock)
        try:
            await taken_down(model)
            circuit = model_outage_of(server.base_url, "m")
            assert circuit.down_since is not None

            async def turn():
                with waiting_when_down(600, clock, lambda left: None):
                    return (await model.complete(ask())).text

            task = asyncio.create_task(turn())
            await clock.until_sleeping(lasting=10.0)
            clock.advance(10)  # the probe, this turn's: failed in a 200 body; the next is due 20 s later
            await server.wait_for(lambda: len(server.requests) == 4)
            await clock.until_sleeping(lasting=20.0)
            assert not task.done()
            clock.advance(20)  # answered
            assert await asyncio.wait_for(task, 5) == "back"
            assert len(server.requests) == 5
        finally:
            await model.aclose()


async def test_a_message_sent_once_the_server_is_back_does_not_go_before_those_that_waited():
    # The turns held resume a few at a time (`ServerOutage.release`); one that did not wait is sent at once, ahead of
    # them: the message of minute 9 answered before that of minute 1, which waits while the first resumed run.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_raw(UPSTREAM_200)
        held = []

        async def play(body):
            if len(server.requests) <= 3:
                return None
            held.append(answer := asyncio.get_running_loop().create_future())
            await answer
            return {"text": body["messages"][-1]["content"]}

        server.respond_with(play)
        model = on(server, clock)
        try:
            await taken_down(model)
            circuit = model_outage_of(server.base_url, "m")

            async def turn(text: str) -> str | None:
                with waiting_when_down(600, clock, lambda left: None):
                    return (await model.complete(ModelRequest(messages=[{"role": "user", "content": text}]))).text

            turns = [asyncio.create_task(turn(f"early {n}")) for n in range(8)]
            await clock.until_sleeping(8, lasting=10.0)
            clock.advance(10)
            await server.wait_for(lambda: len(held) == 1)
            held[0].set_result(None)  # the probe answered: three more resume, four still wait
            await server.wait_for(lambda: len(held) == 4)
            assert len(circuit.waiting) == 4
            late = asyncio.create_task(turn("late"))
            async with asyncio.timeout(5):  # it was sent at once, the turns held still waiting behind
                while len(circuit.waiting) == 4 and server.requests[-1]["messages"][-1]["content"] != "late":
                    await asyncio.sleep(0.005)
            sent = [request["messages"][-1]["content"] for request in server.requests]
            assert "late" not in sent
        finally:
            for answer in held:
                if not answer.done():
                    answer.set_result(None)
            for task in (*turns, late):
                task.cancel()
            await model.aclose()
