"""A self-hosted server not set up for tools refuses every request that offers them: vLLM started without
``--enable-auto-tool-choice``, an Ollama model without tool support. The chat is told the server is not set up
for tools, and the log names what to fix. The openai provider against the fake server, through the gateway."""

from __future__ import annotations

import logging

import pytest

from gateway.replies import REFUSED, TOOLS_REFUSED
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

FIXES = {
    "vllm": "start vLLM with --enable-auto-tool-choice and the --tool-call-parser",
    "ollama": "set model.name to a model that takes tools",
}


@pytest.mark.parametrize("server_kind", FIXES)
async def test_a_server_that_refuses_tools_is_named_as_such(tmp_path, llm, gateways, caplog, server_kind):
    # The chat read the generic REFUSED ("a setting or a feature it does not support"), and the log only the
    # server's words.
    server = await llm(tools_refusal=server_kind)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, name="gemma3:4b")), [chat])
    with caplog.at_level(logging.WARNING, logger="gateway.replies"):
        assert await ask(chat, gateway, "hello") == TOOLS_REFUSED
    assert server.requests[-1]["tools"]
    (line,) = [r.getMessage() for r in caplog.records if "ended early" in r.getMessage()]
    assert "the model server is not set up for tool calls: " + FIXES[server_kind] in line


async def test_another_refusal_is_still_the_generic_one(tmp_path, llm, gateways):
    server = await llm()
    server.push_error(400, {"error": {"message": "temperature is not supported with this model",
                                      "type": "invalid_request_error", "param": "temperature", "code": None}})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == REFUSED
