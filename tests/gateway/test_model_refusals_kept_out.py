"""What the conversation keeps after the model provider refused a turn: the openai provider against a fake
server, through the gateway."""

from __future__ import annotations

import pytest

from gateway.replies import FILTERED
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

BLOCKED = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                                "management policy.", "type": None, "param": "prompt", "code": "content_filter"}}
WITHHELD = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": None}}]}


def said(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


@pytest.mark.parametrize("filtered", ["prompt", "answer"])
async def test_a_message_the_content_filter_blocked_is_not_sent_again_with_the_next(tmp_path, llm, gateways,
                                                                                    filtered):
    # The chat is asked to put it another way, but the blocked message stayed in the conversation, joined to the
    # next one: the filter blocked every message after it too, until /new, and after a restart as well.
    server = await llm()
    server.push_text("hi there")
    if filtered == "prompt":
        server.push_error(400, BLOCKED)
    else:
        server.push_raw(WITHHELD)
    server.push_text("fine")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "hello") == "hi there"
    assert await ask(chat, gateway, "blocked words") == FILTERED
    assert await ask(chat, gateway, "other words") == "fine"
    assert said(server.requests[-1]) == ["hello", "other words"]
    await gateway.stop(grace=0)
    again = RecordingAdapter()
    await ask(again, await gateways(config, [again]), "and now?")
    assert said(server.requests[-1]) == ["hello", "other words", "and now?"]
