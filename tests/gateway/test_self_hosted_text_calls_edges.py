"""Answers that look like tool calls a server left in the text, and are not, or are with a flaw: the openai provider
against the fake server, through the gateway (review of the "Self-hosted models" commit)."""

from __future__ import annotations

import json

import pytest

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model, tool_results

NOT_CALLS = {
    # JSON whose "name" is a list or an object: `in frozenset` raised TypeError, and the turn failed.
    "name-a-list": '{"name": ["Ada", "Lovelace"], "arguments": {}}',
    "name-an-object": '{"name": {"first": "Ada"}}',
    "block-name-a-list": '<tool_call>\n{"name": ["memory"], "arguments": {}}\n</tool_call>',
    # A block shown inside a code block the answer leaves open (the model stopped before closing it): it ran.
    "block-in-open-fence": 'Qwen writes a call so:\n```\n<tool_call>\n'
                           '{"name": "memory", "arguments": {"action": "add", "text": "example"}}\n</tool_call>',
    "block-in-open-xml-fence": 'Like this:\n\n```xml\n<tool_call>{"name": "memory", "arguments": {}}</tool_call>',
}


@pytest.mark.parametrize("content", NOT_CALLS.values(), ids=NOT_CALLS.keys())
async def test_an_answer_that_is_no_call_is_the_answer(tmp_path, llm, gateways, content):
    server = await llm()
    server.push_text(content)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "show me some JSON") == content
    assert len(server.requests) == 1


async def test_half_a_utf16_pair_in_a_call_in_the_text_is_mended_as_a_native_calls_is(tmp_path, llm, gateways):
    # `\ud83d` (half of 😀's escape, as a server that cuts it sends) decoded to a lone surrogate the arguments kept
    # (a native call's are mended): the note was kept, then `call.arguments.encode()` raised and the turn failed.
    server = await llm()
    server.push_text('{"name": "memory", "arguments": {"action": "add", "text": "likes tea \\ud83d"}}')
    server.push_text("Noted.")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "remember that I like tea") == "Noted."
    assert tool_results(server.requests[1]) == ["added note 1"]
    (called,) = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert json.loads(called["tool_calls"][0]["function"]["arguments"])["text"] == "likes tea \ufffd"
