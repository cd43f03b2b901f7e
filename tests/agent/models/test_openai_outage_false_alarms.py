"""A model server is taken for down (`agent.models._outage`) only by failures that show it is not answering: not by
one API key's rate limit, not by answers slow to come, not by a request refused before it was sent. The real SDK
over loopback sockets, a manual fake clock for the probes' waits."""

from __future__ import annotations

import asyncio
import logging

import pytest
from openai import AsyncOpenAI

from agent import ModelError
from agent._errors import server_down
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

try:
    import httpx2 as httpx
except ImportError:
    import httpx

HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
DOWN = {"error": {"message": "upstream connect error", "type": "server_error", "param": None, "code": None}}
TPM = {"error": {"message": "Rate limit reached for gpt-4o on tokens per min (TPM)", "type": "tokens", "param": None,
                 "code": "rate_limit_exceeded"}}


def model(url: str, clock: FakeClock, *, key: str = "sk-test", name: str = "m", max_retries: int = 0,
          timeout: float = 120.0) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name=name, base_url=url, api_key=key, max_retries=max_retries,
                                     timeout_seconds=timeout), env={}, clock=clock)


async def fails(llm: OpenAIModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async with asyncio.timeout(5):
            await llm.complete(HELLO)
    return caught.value


def told(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent.models"]


async def test_a_key_over_its_rate_limit_holds_no_other_key_nor_model_on_its_server(caplog):
    # One heavy chat over its tokens a minute had delegation.model's calls, and a route's with a key of its own,
    # held as calls to a server that is down.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(429, TPM, {"retry-after": "20"})
        heavy, other_key = model(server.base_url, clock), model(server.base_url, clock, key="sk-route")
        other_model = model(server.base_url, clock, name="small")
        try:
            with caplog.at_level(logging.WARNING, logger="agent.models"):
                assert [(await fails(heavy)).kind for _ in range(3)] == ["rate_limited"] * 3
                assert (await other_key.complete(HELLO)).text == "fine"
                assert (await other_model.complete(HELLO)).text == "fine"
                held = await fails(heavy)  # the limited key and model: not sent
                assert len(server.requests) == 5
                assert held.kind == "rate_limited" and held.retry_after == 20 and not server_down(str(held))
                assert "sk-test" not in str(held)
                clock.advance(20)
                assert (await heavy.complete(HELLO)).text == "fine"  # the probe, once the wait asked for is over
        finally:
            for llm in (heavy, other_key, other_model):
                await llm.aclose()
    lines = told(caplog)
    assert len(lines) == 2 and not any("taken for down" in line or "sk-test" in line for line in lines)
    assert "over its rate limit" in lines[0] and "'m'" in lines[0] and "no longer refused" in lines[1]


@pytest.mark.parametrize("slow", ["no answer in time", "504", "524"])
async def test_answers_slow_to_come_take_no_server_for_down(slow):
    # Three long subagent calls past timeout_seconds (or past a proxy's wait: nginx's 504, Cloudflare's 524) had
    # every chat's calls held, though the server was answering the others.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            if slow == "no answer in time":
                server.push_hang()
            else:
                server.push_error(int(slow), f"<html><title>{slow} Gateway Timeout</title></html>")
        # Not 0.2 s: a request a loaded machine took longer to send left its hang for the next call, which failed.
        llm = model(server.base_url, clock, timeout=1.0)
        try:
            assert {(await fails(llm)).kind for _ in range(3)} == {"timeout"}
            assert (await llm.complete(HELLO)).text == "fine"
        finally:
            await llm.aclose()
    assert len(server.requests) == 4


async def test_a_connection_not_opened_in_time_still_takes_the_server_for_down(unanswered_port):
    clock = FakeClock(autojump=False)
    url = f"http://127.0.0.1:{unanswered_port}/v1"
    client = AsyncOpenAI(api_key="sk-test", base_url=url, timeout=httpx.Timeout(5.0, connect=0.05), max_retries=0)
    llm = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=url), client=client, env={}, clock=clock)
    try:
        assert [(await fails(llm)).kind for _ in range(3)] == ["timeout"] * 3
        held = await fails(llm)
    finally:
        await client.close()
    assert held.kind == "timeout" and server_down(str(held))


async def test_a_probe_refused_before_it_was_sent_does_not_end_the_outage(caplog):
    # A request no client can send (a key's header) reached no server: it read as the server answering again.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(10):
            server.push_error(503, DOWN, {"retry-after-ms": "1"})
        llm = model(server.base_url, clock, max_retries=2)
        client = AsyncOpenAI(api_key="sk-\u200b-injected", base_url=server.base_url, max_retries=0)
        unsendable = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url), client=client,
                                 env={}, clock=clock)
        try:
            with caplog.at_level(logging.WARNING, logger="agent.models"):
                for _ in range(3):
                    await fails(llm)
                clock.advance(10)
                assert (await fails(unsendable)).kind == "bad_request"
                assert len(server.requests) == 9
                probe = await fails(llm)  # still a probe: one request, no retries
                assert len(server.requests) == 10 and "a probe of a model server that is down" in str(probe)
                assert server_down(str(await fails(llm)))
        finally:
            await llm.aclose()
            await client.close()
    lines = told(caplog)
    assert len(lines) == 1 and "taken for down" in lines[0]


@pytest.mark.parametrize("after", ["inf", "1e12"])
async def test_a_retry_after_of_ever_holds_a_key_an_hour_at_most(after):
    # A 429's Retry-After of inf (or of thirty thousand years) put the next probe off for ever: the model with that
    # key was never asked again until a restart.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_error(429, TPM, {"retry-after": after})
        llm = model(server.base_url, clock)
        try:
            for _ in range(3):
                await fails(llm)
            held = await fails(llm)
            assert held.kind == "rate_limited" and held.retry_after == 3600
            clock.advance(3600)
            assert (await llm.complete(HELLO)).text == "fine"
        finally:
            await llm.aclose()
    assert len(server.requests) == 4
