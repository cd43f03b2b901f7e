"""Calls a busy provider told to come back after the same ``Retry-After`` do not all come back at once
(`agent.models._retry_budget.RetryBudget.spread`): the real SDK over a loopback socket, and the wait's bounds."""

from __future__ import annotations

import asyncio
import time

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models._retry_budget import RETRY_SECONDS, RetryBudget, begin
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

CALLS = 16
WAIT = 0.3
BUSY = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None, "code": None}}


async def test_calls_told_the_same_retry_after_at_once_come_back_spread_over_a_quarter_more():
    # A batch of subagents (or chats that wrote at once) refused together with "Retry-After: 30" all asked again in
    # the same millisecond, 30 s later: the provider, just back, met the whole batch at once, and refused it again.
    arrived: dict[str, list[float]] = {}

    def record(body):
        arrived.setdefault(body["messages"][-1]["content"], []).append(time.monotonic())

    async with FakeOpenAIServer() as server:
        server.respond_with(record)
        for _ in range(CALLS):
            server.push_error(503, BUSY, {"retry-after": str(WAIT)})
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=2), env={})
        try:
            async with asyncio.timeout(5):
                await asyncio.gather(*(model.complete(ModelRequest(messages=[{"role": "user", "content": f"ask {n}"}]))
                                       for n in range(CALLS)))
        finally:
            await model.aclose()
    waits = [second - first for first, second in arrived.values()]
    assert len(waits) == CALLS
    assert min(waits) >= WAIT  # never sooner than the provider asked
    assert max(waits) - min(waits) >= 0.1 * WAIT  # up to a quarter more, at random: ~0.07 s apart, not ~0.003 s


async def test_a_spread_wait_ends_within_two_minutes_and_within_the_calls_retry_budget():
    # Past two minutes the SDK does not wait at all but fails the call; past the budget, the call would end later.
    clock = FakeClock(autojump=False)
    budget = RetryBudget()
    begin(budget, clock)
    headers = {"x-stainless-retry-count": "0"}
    for _ in range(200):
        assert 119.0 <= budget.spread(headers, 119.0, clock, 2) <= 120.0
        assert 100.0 <= budget.spread(headers, 100.0, clock, 2) <= RETRY_SECONDS
    clock.advance(30.0)
    for _ in range(200):
        assert 80.0 <= budget.spread(headers, 80.0, clock, 2) <= RETRY_SECONDS - 30.0


async def test_the_wait_the_provider_asked_for_last_is_told_as_it_said():
    # The last refusal is the one raised (`ModelError.retry_after`, the chat's "try again in about …"): unspread.
    clock = FakeClock(autojump=False)
    budget = RetryBudget()
    begin(budget, clock)
    assert budget.spread({"x-stainless-retry-count": "2"}, 7.0, clock, 2) is None
    assert budget.spread({"x-stainless-retry-count": "0"}, None, clock, 2) is None  # the SDK's own backoff: jittered
    async with FakeOpenAIServer() as server:
        server.push_error(429, headers={"retry-after": "0.01"})
        server.push_error(429, headers={"retry-after": "70"})
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=1), env={})
        try:
            try:
                await model.complete(ModelRequest(messages=[{"role": "user", "content": "hello"}]))
            except ModelError as exc:
                error = exc
        finally:
            await model.aclose()
    assert (error.kind, error.retry_after, len(server.requests)) == ("rate_limited", 70.0, 2)
