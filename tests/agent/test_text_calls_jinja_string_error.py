"""llama-server's refusal of tools without ``--jinja`` read whatever the shape of its ``error``: an object
(its own ``{"error": {"code": 500, "message": …}}``) or the words alone (``{"error": "…"}``). Read only as an
object, the bare string was a failing server: asked again by the SDK, counted toward the model's outage, and the
chat never told what to fix. OpenAIModel and the real SDK against FakeOpenAIServer over loopback."""

from __future__ import annotations

import pytest

from agent import ModelError
from agent._errors import refuses_tools
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

TOOLS = ({"type": "function", "function": {"name": "memory", "parameters": {"type": "object", "properties": {}}}},)
ASKED = ModelRequest(messages=[{"role": "user", "content": "hello"}], tools=TOOLS)
WORDS = "tools param requires --jinja flag"
SHAPES = {
    "object": {"error": {"code": 500, "message": WORDS, "type": "server_error"}},
    "string": {"error": WORDS},
}


@pytest.mark.parametrize("body", SHAPES.values(), ids=SHAPES.keys())
async def test_llama_servers_refusal_of_tools_is_read_whatever_the_shape_of_its_error(body):
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_error(500, body)
        model = OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url,
                                          max_retries=2), env={})
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ASKED)
        finally:
            await model.aclose()
        assert len(server.requests) == 1  # not asked again: each request meets the same refusal
    assert caught.value.kind == "bad_request", str(caught.value)
    assert refuses_tools(str(caught.value)) and "start llama-server with --jinja" in str(caught.value)


async def test_another_500_whose_error_is_a_string_is_still_a_server_error():
    async with FakeOpenAIServer() as server:
        server.push_error(500, {"error": "failed to decode the batch"})
        model = OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url,
                                          max_retries=0), env={})
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ASKED)
        finally:
            await model.aclose()
    assert caught.value.kind == "server_error" and not refuses_tools(str(caught.value))
