"""Refusals of self-hosted servers and proxies in their own words: llama-server started without ``--jinja``
refuses every request that offers tools with a 500, LiteLLM words a request over the model's window by its
exception's name, and a subagent whose server takes no tools is told so. OpenAIModel and the real SDK against
FakeOpenAIServer over loopback."""

from __future__ import annotations

import pytest

from agent import ModelError
from agent._errors import refuses_tools
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer
from gateway import replies

TOOLS = ({"type": "function", "function": {"name": "memory", "parameters": {"type": "object", "properties": {}}}},)
ASKED = ModelRequest(messages=[{"role": "user", "content": "hello"}], tools=TOOLS)
NO_JINJA = {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}
"""llama-server's answer (`oaicompat_chat_params_parse` throws, the handler answers 500) to tools without --jinja."""


def model_of(server: FakeOpenAIServer, max_retries: int = 0) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url,
                                     max_retries=max_retries), env={})


async def test_llama_server_without_jinja_is_a_server_not_set_up_for_tools_not_an_outage():
    # Taken for a 5xx of the model's: asked three times each, three calls took the model for down, and every later
    # turn waited for it, then read "the model server is down" instead of what to fix.
    async with FakeOpenAIServer() as server:
        for _ in range(5):
            server.push_error(500, NO_JINJA)
        model = model_of(server, max_retries=2)
        try:
            errors = []
            for _ in range(5):
                with pytest.raises(ModelError) as caught:
                    await model.complete(ASKED)
                errors.append(caught.value)
        finally:
            await model.aclose()
        assert len(server.requests) == 5  # each sent, once: asking again meets the same refusal
    for error in errors:
        assert error.kind == "bad_request", str(error)
        assert refuses_tools(str(error)) and "start llama-server with --jinja" in str(error)
        assert "not sent" not in str(error)


async def test_another_500_of_llama_servers_is_still_a_server_error():
    async with FakeOpenAIServer() as server:
        failed = {"code": 500, "message": "failed to decode the batch", "type": "server_error"}
        server.push_error(500, {"error": failed})
        model = model_of(server)
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ASKED)
        finally:
            await model.aclose()
    assert caught.value.kind == "server_error" and not refuses_tools(str(caught.value))


LITELLM = {
    "vertex": "litellm.ContextWindowExceededError: litellm.BadRequestError: VertexAIException - The input token "
              "count exceeds the maximum number of tokens allowed (1048576).",
    "bedrock": "litellm.ContextWindowExceededError: litellm.BadRequestError: BedrockException - Input is too long "
               "for requested model.",
    "anthropic": "litellm.ContextWindowExceededError: litellm.BadRequestError: AnthropicException - input length and "
                 "`max_tokens` exceed context limit: 197626 + 8192 > 200000",
    "as-briefed": "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - This model's "
                  "maximum context length is 8192 tokens.",
}


@pytest.mark.parametrize("message", LITELLM.values(), ids=LITELLM.keys())
async def test_litellms_context_window_error_is_a_request_too_long(message):
    # Not read as one, it was a request the model cannot take: the conversation was never compacted.
    async with FakeOpenAIServer() as server:
        server.push_error(400, {"error": {"message": message + "\nReceived Model Group=big\nAvailable Model Group "
                                          "Fallbacks=None", "type": None, "param": None, "code": "400"}})
        model = model_of(server)
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ASKED)
        finally:
            await model.aclose()
    assert caught.value.kind == "bad_request" and caught.value.context_exceeded


@pytest.mark.parametrize("refusal", ["vllm", "ollama", "llama.cpp"])
async def test_a_subagent_whose_server_takes_no_tools_is_told_so(refusal):
    # It read the generic refusal ("cannot take"), which names no reason.
    async with FakeOpenAIServer(tools_refusal=None if refusal == "llama.cpp" else refusal) as server:
        if refusal == "llama.cpp":
            server.push_error(500, NO_JINJA)
        model = model_of(server)
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ASKED)
        finally:
            await model.aclose()
    reason = replies.child_failure_reason(str(caught.value))
    assert reason.startswith(replies.CHILD_REFUSED + ": ") and "not set up for tool calls" in reason
    assert "--" not in reason and "ollama.com" not in reason  # the operator's fix is the log's, not the chat's
