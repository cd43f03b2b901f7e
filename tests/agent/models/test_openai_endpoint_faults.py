"""OpenAIModel and Transcriber at an endpoint that cannot be reached, refuses the key or answers in parts:
the real SDK over loopback sockets."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models import openai as openai_model
from agent.models.transcription import Transcriber
from agent.settings import ModelSettings, TranscriptionSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])


async def failure(model: OpenAIModel) -> ModelError:
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(HELLO)
    finally:
        await model.aclose()
    return caught.value


@pytest.fixture
def unreachable():
    """The URL of a port whose accept queue is full: Linux drops further SYNs, so a connection never opens,
    as with a firewall that drops packets or a VPN that is down."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    yield f"http://127.0.0.1:{port}/v1"
    for sock in (*fillers, listener):
        sock.close()


async def test_a_connection_that_does_not_open_fails_fast_and_is_asked_again(unreachable, monkeypatch, caplog):
    # The connect timeout was the whole model.timeout_seconds (120 s by default), and the request's own bound
    # of the same length expired first: a dead server held each turn that long, and was never asked again.
    monkeypatch.setattr(openai_model, "CONNECT_TIMEOUT", 0.2, raising=False)
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=unreachable, api_key=KEY,
                                      timeout_seconds=60.0, max_retries=1), env={})
    with caplog.at_level(logging.INFO, logger="openai"):
        async with asyncio.timeout(10):
            error = await failure(model)
    assert error.kind == "timeout"
    assert caplog.text.count("Retrying request") == 1


async def test_a_refused_key_names_the_model_and_server_never_the_key_or_password():
    # With delegation routes on servers and keys of their own, "401 - Incorrect API key provided." said
    # nothing of which model's settings to fix.
    async with FakeOpenAIServer(api_key=KEY) as server:
        base_url = server.base_url.replace("http://", "http://alice:pw-s3cret-9@")
        error = await failure(OpenAIModel(ModelSettings(provider="openai", name="gpt-route", base_url=base_url,
                                                        api_key="sk-wrong-key-abcdef", max_retries=0), env={}))
    assert error.kind == "auth"
    assert f"(model 'gpt-route' at {server.base_url})" in str(error)
    assert "pw-s3cret-9" not in str(error) and "alice" not in str(error) and "sk-wrong-key" not in str(error)


def test_the_server_named_keeps_no_credentials_query_or_fragment():
    named = openai_model._named("m", "https://alice:pw@proxy.example/v1?api_key=qk-1#access_token=t-1")
    assert named == "model 'm' at https://proxy.example/v1"


async def test_a_base_url_without_v1_is_named_in_the_not_found_failure():
    async with FakeOpenAIServer(api_key=KEY) as server:
        root = server.base_url.removesuffix("/v1")
        error = await failure(OpenAIModel(ModelSettings(provider="openai", name="llama3", base_url=root,
                                                        api_key=KEY, max_retries=0), env={}))
    assert error.kind == "not_found"
    assert str(error).endswith(f"(model 'llama3' at {root})")


async def test_a_refused_transcription_key_names_the_speech_model_and_server():
    async with FakeOpenAIServer(api_key=KEY) as server:
        transcriber = Transcriber(ModelSettings(
            provider="openai", base_url=server.base_url, api_key="sk-wrong-key-abcdef", max_retries=0,
            transcription=TranscriptionSettings(name="whisper-1")))
        try:
            with pytest.raises(ModelError) as caught:
                await transcriber.transcribe(b"OggS", filename="voice.ogg", mime_type="audio/ogg")
        finally:
            await transcriber.aclose()
    assert caught.value.kind == "auth"
    assert f"(model 'whisper-1' at {server.base_url})" in str(caught.value)
    assert "sk-wrong-key" not in str(caught.value)


async def test_an_answer_sent_as_a_list_of_parts_is_its_text_without_the_thinking():
    # Mistral's reasoning models (Magistral) send content as parts: every answer failed as "malformed".
    content = [{"type": "thinking", "thinking": [{"type": "text", "text": "let me see"}]},
               {"type": "text", "text": "the "}, {"type": "text", "text": "answer"}]
    async with FakeOpenAIServer(api_key=KEY) as server:
        server.push_raw({"id": "x", "object": "chat.completion", "model": "magistral-medium-latest",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": content}}]})
        model = OpenAIModel(ModelSettings(provider="openai", name="magistral-medium-latest",
                                          base_url=server.base_url, api_key=KEY, max_retries=0), env={})
        try:
            response = await model.complete(HELLO)
        finally:
            await model.aclose()
    assert (response.text, response.tool_calls) == ("the answer", ())
