"""OpenAIModel against servers that misbehave: reasoning left in the answer with only its end tag, and a
connection closed in the middle of an answer. The real SDK over real loopback sockets."""

from __future__ import annotations

import asyncio

import pytest

from agent import AgentSession, ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])


def model_at(base_url: str) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="m", base_url=base_url, api_key=KEY,
                                     timeout_seconds=5.0, max_retries=0), env={})


@pytest.mark.parametrize(("content", "text"), [
    ("Okay, the user greets me. I should greet back.\n</think>\n\nHello!", "Hello!"),
    ("\n</think>\n\nHello!", "Hello!"),
    ("Close the block with `</think>`, on the same line.", "Close the block with `</think>`, on the same line."),
    ("Write <think>\nplan\n</think>\nthen the answer.", "Write <think>\nplan\n</think>\nthen the answer."),
], ids=["reasoning-then-end", "empty-reasoning", "end-tag-quoted", "whole-block-quoted"])
async def test_reasoning_whose_block_the_chat_template_opened_is_not_the_answer(content, text):
    # DeepSeek-R1's distills and QwQ on vLLM without a reasoning parser: the template puts <think> into the
    # prompt, so the answer holds the reasoning and its </think> only. The chat read the model's monologue.
    async with FakeOpenAIServer(api_key=KEY) as server:
        server.push_text(content)
        server.push_text("again")
        model = model_at(server.base_url)
        try:
            session = AgentSession(model=model)
            assert (await session.run_turn("hi")).text == text
            await session.run_turn("and?")
        finally:
            await model.aclose()
    # Nor is the reasoning sent back with the conversation.
    assert server.requests[1]["messages"][1] == {"role": "assistant", "content": text}


async def test_a_connection_closed_in_the_middle_of_an_answer_is_logged_with_what_happened():
    async def half_an_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                     b'{"choices": [')
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(half_an_answer, "127.0.0.1", 0)
    model = model_at(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
    try:
        with pytest.raises(ModelError) as info:
            await model.complete(HELLO)
    finally:
        await model.aclose()
        server.close()
        await server.wait_closed()
    # The SDK's own text was all there was: "Connection error.", whatever had happened.
    assert info.value.kind == "connection"
    assert "RemoteProtocolError: peer closed connection without sending complete message body" in str(info.value)
    assert KEY not in str(info.value)
