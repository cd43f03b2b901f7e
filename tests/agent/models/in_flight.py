"""What the tests of model calls in flight as a circuit opens share (`test_openai_outage_in_flight*.py`): a model on
a loopback server, a call expected to fail, and a server answer held until the test lets it go."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
SOON = {"retry-after-ms": "1"}  # the SDK's wait before a retry, short for the test


def model(server: FakeOpenAIServer, clock: FakeClock, *, max_retries: int, name: str = "m",
          max_concurrent_requests: int | None = None) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name=name, base_url=server.base_url, api_key="sk-test",
                                     max_retries=max_retries, max_concurrent_requests=max_concurrent_requests),
                       env={}, clock=clock)


async def fails(llm: OpenAIModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async with asyncio.timeout(5):
            await llm.complete(HELLO)
    return caught.value


def held_first() -> tuple[asyncio.Event, list[object], Callable[[object], Awaitable[None]]]:
    """The gate, the requests held, and a responder holding the first request until the gate opens."""
    gate, waiting = asyncio.Event(), []

    async def first_held(body: object) -> None:
        if not waiting:
            waiting.append(body)
            await gate.wait()
        return None  # then answered from the queue

    return gate, waiting, first_held
