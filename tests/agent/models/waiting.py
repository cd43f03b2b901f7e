"""What the tests of turns waiting for a model down to come back share (`test_openai_outage_waiting*.py`): a model
on a loopback server without retries, and its three calls that fail, taking it for down."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

DOWN = {"error": {"message": "upstream connect error", "type": "server_error", "param": None, "code": None}}


def ask() -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "hi"}])


def on(server: FakeOpenAIServer, clock: FakeClock) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                     max_retries=0), env={}, clock=clock)


async def taken_down(model: OpenAIModel) -> None:
    """Three calls that fail (the server's answers queued by the caller): the circuit takes it for down."""
    for _ in range(3):
        with pytest.raises(ModelError):
            await model.complete(ask())


def failing_then_held(server: FakeOpenAIServer, failures: int) -> list[asyncio.Future[None]]:
    """Have ``server`` fail its next ``failures`` calls with a 503 of its own words, then hold each call's answer
    (``ok``) until the test sets the future it appends to the list returned."""
    left, held = [failures], []

    async def play(body):
        if left[0]:
            left[0] -= 1
            server.push_error(503, DOWN)
            return None
        held.append(answer := asyncio.get_running_loop().create_future())
        await answer
        return {"text": "ok"}

    server.respond_with(play)
    return held
