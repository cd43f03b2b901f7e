"""What the chat reads from a self-hosted OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp) that
answers in its own ways: tool calls left in the answer's text by a server without a parser for the model's
format, and llama-server's refusal of a request too long, which names its window only in a field of its own.
The openai provider against the fake server, through the gateway."""

from __future__ import annotations

import json

import pytest

from gateway.replies import MESSAGE_TOO_LONG, TOO_LONG
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model, tool_results

NOTE = {"action": "add", "text": "likes green tea"}

IN_TEXT = {
    "hermes": f'<tool_call>\n{json.dumps({"name": "memory", "arguments": NOTE})}\n</tool_call>',
    "hermes-after-words": f'I will note that.\n<tool_call>\n{json.dumps({"name": "memory", "arguments": NOTE})}',
    "llama-json": json.dumps({"name": "memory", "parameters": NOTE}),
    "llama-python-tag": "<|python_tag|>" + json.dumps({"name": "memory", "parameters": NOTE}),
    "json-fence": f'```json\n{json.dumps({"name": "memory", "arguments": NOTE})}\n```',
    "qwen-coder-tools": f'<tools>\n[{json.dumps({"name": "memory", "arguments": NOTE})}]\n</tools>',
    "after-reasoning": "<think>They want it kept.</think>\n\n<tool_call>"
                       f'{json.dumps({"name": "memory", "arguments": NOTE})}</tool_call>',
}


@pytest.mark.parametrize("content", IN_TEXT.values(), ids=IN_TEXT.keys())
async def test_a_tool_call_the_server_left_in_the_text_is_run(tmp_path, llm, gateways, content):
    # The chat read the call's JSON as the reply, and no note was kept.
    server = await llm()
    server.push_text(content)
    server.push_text("Noted.")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "remember that I like green tea") == "Noted."
    assert len(server.requests) == 2
    assert tool_results(server.requests[1]) == ["added note 1"]
    (called,) = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert called["tool_calls"][0]["function"]["name"] == "memory"
    assert json.loads(called["tool_calls"][0]["function"]["arguments"]) == NOTE
    assert "<tool_call>" not in json.dumps(called) and "python_tag" not in json.dumps(called)
    assert await ask(chat, gateway, "what do you remember?")  # the conversation the server is sent again is whole
    assert "likes green tea" in json.dumps(server.requests[2]["messages"])


NOT_CALLS = {
    "example-among-words": 'A call looks like this: {"name": "memory", "arguments": {"action": "list"}} and so on.',
    "fence-then-words": '```json\n{"name": "memory", "arguments": {"action": "list"}}\n```\nThat is the shape.',
    "no-such-tool": '{"name": "launch_rockets", "arguments": {}}',
    "other-json": '{"name": "Ada", "age": 36}',
    "broken-json": '<tool_call>\n{"name": "memory", "arguments": {"action": \n</tool_call>',
    "block-quoted-in-code": 'Qwen writes:\n```\n<tool_call>{"name": "memory", "arguments": {}}</tool_call>\n```',
}


@pytest.mark.parametrize("content", NOT_CALLS.values(), ids=NOT_CALLS.keys())
async def test_an_answer_that_only_shows_json_is_the_answer(tmp_path, llm, gateways, content):
    server = await llm()
    server.push_text(content)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "what does a tool call look like?") == content
    assert len(server.requests) == 1


async def test_a_message_too_long_for_llama_servers_window_is_told_as_such_not_as_a_conversation_to_renew(
        tmp_path, llm, gateways):
    # llama-server says "the request exceeds the available context size, try increasing it" and puts its window
    # in `n_ctx`: unread, the chat was told to send /new, which refuses the same message again.
    server = await llm(context_window=2048, context_refusal="llama.cpp")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    reply = await ask(chat, gateway, "log line " * 3000)
    assert reply != TOO_LONG
    assert reply.startswith(MESSAGE_TOO_LONG.split("{length}")[0])
