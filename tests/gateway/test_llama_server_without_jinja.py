"""llama-server started without ``--jinja`` refuses every request that offers tools with a 500 ("tools param
requires --jinja flag"): the chat is told the server is not set up for tools, as for vLLM and Ollama, the log
names the flag, and no outage is taken from it. The openai provider against the fake server, through the gateway."""

from __future__ import annotations

import logging

from gateway.ledger import COMPLETION_PREFIX
from gateway.replies import CHILD_REFUSED, TOOLS_REFUSED
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import ask, is_child, openai_model

NO_JINJA = {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}


async def test_llama_server_without_jinja_is_told_as_a_server_not_set_up_for_tools(tmp_path, llm, gateways, caplog):
    # Taken for the model failing: each message was asked again and again, the chat read "try again in a moment",
    # and from the fourth on that the model server is down, its calls held back, the flag named nowhere.
    server = await llm()
    for _ in range(4):
        server.push_error(500, NO_JINJA)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, max_retries=2)), [chat])
    with caplog.at_level(logging.WARNING, logger="gateway.replies"):
        for n in range(4):
            assert await ask(chat, gateway, f"hello {n}") == TOOLS_REFUSED
    assert len(server.requests) == 4  # each message's request sent once, none held back
    lines = [r.getMessage() for r in caplog.records if "ended early" in r.getMessage()]
    assert len(lines) == 4
    assert all("the model server is not set up for tool calls: start llama-server with --jinja" in line
               for line in lines)


async def test_a_subagent_whose_server_takes_no_tools_is_told_so_in_the_chat(tmp_path, llm, gateways):
    # The chat read the generic "the model provider refused its request as one the model … cannot take".
    server = await llm()

    def parent(body: dict) -> dict | None:
        if is_child(body):
            return None  # the queue: the child's server refuses its tools
        last = body["messages"][-1]
        if last["role"] == "user" and str(last["content"]).startswith(COMPLETION_PREFIX):
            return {"text": "It failed."}
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": "look it up"}]}}]}
        return {"text": "on it"}

    server.respond_with(parent)
    server.push_error(500, NO_JINJA)
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), display={"interim_assistant_messages": True})
    gateway = await gateways(config, [chat])
    await chat.say("have a subagent look it up")
    await chat.wait_for(lambda: any("Subagent failed" in text for text in chat.texts()))
    await settled(gateway)
    (warned,) = [text for text in chat.texts() if "Subagent failed" in text]
    assert f"⚠️ Subagent failed: look it up: {CHILD_REFUSED}: its model server is not set up for tool calls" in warned
