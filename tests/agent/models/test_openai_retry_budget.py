"""How long one OpenAIModel call (or a voice transcription) goes on retrying (`agent.models._retry_budget`): no
retry, nor a wait before one, that would end past two minutes into the call, whatever model.max_retries; and an
error in a 200 body that is a 409 read as the passing conflict its status line is. The real SDK over loopback
sockets; a manual fake clock that each request moves on, as a slow server would."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models.transcription import Transcriber
from agent.settings import ModelSettings, TranscriptionSettings
from agent.testing import FakeClock, FakeOpenAIServer

HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
BUSY = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None, "code": None}}


async def failure(server: FakeOpenAIServer, clock: FakeClock, *, max_retries: int) -> ModelError:
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=max_retries), env={}, clock=clock)
    try:
        with pytest.raises(ModelError) as caught:
            async with asyncio.timeout(5):  # the SDK's own waits are real seconds: a minute's would hang here
                await model.complete(HELLO)
    finally:
        await model.aclose()
    return caught.value


def taking(clock: FakeClock, seconds: float):
    """A responder that makes each request take ``seconds`` of the clock, then answers from the queue."""
    def respond(body):
        clock.advance(seconds)

    return respond


async def test_no_retry_begins_past_two_minutes_into_the_call():
    # Each request failing after 100 s: with 5 retries the SDK asked 6 times (10 minutes with 120 s each and two
    # minutes' Retry-After between, for the default 2 retries), and the chat waited all that for "try again".
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        server.respond_with(taking(clock, 100.0))
        for _ in range(6):
            server.push_error(503, BUSY, {"retry-after-ms": "1"})
        error = await failure(server, clock, max_retries=5)
    assert len(server.requests) == 2  # the second began 100 s in; a third would begin 200 s in
    assert error.kind == "server_error" and error.status == 503
    assert "retried for 120 seconds at most" in str(error)


async def test_a_wait_that_would_end_past_the_budget_is_not_begun():
    # A 429 asking for 100 s, 30 s into the call: the SDK slept the 100 s (real ones) before asking again.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        server.respond_with(taking(clock, 30.0))
        server.push_error(429, {"error": {"message": "Rate limit reached", "type": "requests", "code": None}},
                          {"retry-after": "100"})
        server.push_text("too late")
        error = await failure(server, clock, max_retries=2)
    assert len(server.requests) == 1
    assert (error.kind, error.retry_after) == ("rate_limited", 100.0)  # the chat is told to wait about 2 minutes
    assert "retried for 120 seconds at most" in str(error)


async def test_a_refusal_marked_to_retry_stays_a_passing_one_when_the_budget_ends_it():
    # Marked x-should-retry: false to stop the SDK, a 400 its server marked true read as a refusal that recurs.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        server.respond_with(taking(clock, 130.0))
        server.push_error(400, BUSY, {"x-should-retry": "true", "retry-after-ms": "1"})
        error = await failure(server, clock, max_retries=2)
    assert len(server.requests) == 1 and error.kind == "server_error"


@pytest.mark.parametrize("call", ["chat", "transcription"])
async def test_a_connection_lost_past_the_budget_is_not_asked_again(call):
    clock = FakeClock(autojump=False)
    attempts = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal attempts
        attempts += 1
        await reader.readuntil(b"\r\n\r\n")
        clock.advance(130.0)
        writer.close()  # no answer at all: the SDK's "Connection error.", which it asks again after

    listener = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    settings = ModelSettings(provider="openai", name="m", api_key="sk-test", max_retries=3,
                             base_url=f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1",
                             transcription=TranscriptionSettings(name="whisper-1"))
    client = (OpenAIModel if call == "chat" else Transcriber)(settings, env={}, clock=clock)
    try:
        with pytest.raises(ModelError) as caught:
            async with asyncio.timeout(5):  # the SDK's backoff (0.5 s, 1 s, 2 s) before each of 3 retries
                await (client.complete(HELLO) if call == "chat" else client.transcribe(b"RIFF", filename="a.wav"))
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()
    assert attempts == 1
    assert caught.value.kind == "connection" and "retried for 120 seconds at most" in str(caught.value)


async def test_retries_within_the_budget_are_made_as_before():
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        server.respond_with(taking(clock, 10.0))
        server.push_error(503, BUSY, {"retry-after-ms": "1"})
        server.push_error(503, BUSY, {"retry-after-ms": "1"})
        server.push_text("at last")
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=2), env={}, clock=clock)
        try:
            assert (await model.complete(HELLO)).text == "at last"
        finally:
            await model.aclose()
    assert len(server.requests) == 3


async def test_a_409_in_a_200_body_is_a_passing_conflict_not_a_refusal():
    # As the status line's 409 is (the SDK asks it again): read as bad_request, the chat was told the operator
    # must change the model's settings.
    async with FakeOpenAIServer() as server:
        server.push_raw({"error": {"message": "Conflict: the request could not be completed, try again", "code": 409}})
        error = await failure(server, FakeClock(autojump=False), max_retries=0)
    assert (error.kind, error.status) == ("server_error", 409)
