"""What the chat reads when the model misbehaves: the openai provider against a fake server,
through the gateway."""

from __future__ import annotations

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import openai_model


async def ask(chat: RecordingAdapter, gateway, text: str) -> str:
    replies = len(chat.texts("reply"))
    await chat.say(text)
    await chat.wait_for(lambda: len(chat.texts("reply")) > replies)
    await settled(gateway)
    return chat.texts("reply")[-1]


async def test_half_an_emoji_from_the_model_does_not_break_the_conversation(tmp_path, llm, gateways):
    server = await llm()
    server.push_raw('{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0,'
                    ' "finish_reason": "stop", "message": {"role": "assistant", "content": "smile \\ud83d"}}]}')
    server.push_text("still here")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == "smile \ufffd"
    assert await ask(chat, gateway, "and again") == "still here"
