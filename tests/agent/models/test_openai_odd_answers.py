"""OpenAIModel given answers that are not the chat completion asked for: a web page, a body that is not
JSON, a completion without choices, a refusal in its own field. The real SDK over loopback sockets."""

from __future__ import annotations

import pytest

from agent import ModelError, model_failure_kind
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
PAGE = "<!DOCTYPE html>\n<html><head><title>Open WebUI</title></head><body>" + "x" * 5000 + "</body></html>"


async def answer(push) -> tuple[ModelError, str]:
    async with FakeOpenAIServer(api_key=KEY) as server:
        push(server)
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key=KEY,
                                          max_retries=0), env={})
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(HELLO)
        finally:
            await model.aclose()
    return caught.value, server.base_url


async def test_a_web_page_answered_with_200_names_the_server_and_what_it_sent():
    # A base_url at a web UI or a captive portal: the log said only "model response malformed: no choices".
    error, base_url = await answer(lambda server: server.push_raw(PAGE, content_type="text/html"))
    assert error.kind == "malformed"
    assert f"(model 'm' at {base_url})" in str(error)
    assert "<!DOCTYPE html> <html><head><title>Open WebUI</title>" in str(error)
    assert len(str(error)) < 500


async def test_a_body_that_is_not_json_quotes_what_the_server_sent():
    error, base_url = await answer(lambda server: server.push_raw("upstream connect error",
                                                                  content_type="application/json"))
    assert error.kind == "malformed"
    assert "upstream connect error" in str(error) and f"(model 'm' at {base_url})" in str(error)


@pytest.mark.parametrize("body", [
    PAGE,
    {"id": "x", "object": "chat.completion", "choices": []},
    {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": None}]},
    {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": 7}}]},
], ids=["page", "no-choices", "no-message", "content-not-text"])
async def test_a_malformed_answer_is_told_as_a_failed_model_call_of_its_kind(body):
    # Its text lacked the "model request failed (malformed): " every other failure starts with, which is all that
    # outlives the error: a child failing so was shown to the chat in these words, not as a failed model call.
    error, _ = await answer(lambda server: server.push_raw(body, content_type="text/html" if body is PAGE
                                                           else "application/json"))
    assert model_failure_kind(str(error)) == "malformed"


async def test_a_refusal_in_its_own_field_is_the_answer():
    # OpenAI's models put a refusal in message.refusal, with content null: the chat read "(The model ended its turn
    # without writing an answer …)" instead of the model's reason.
    async with FakeOpenAIServer(api_key=KEY) as server:
        server.push_raw({"id": "x", "object": "chat.completion", "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": None, "refusal": "I can't help with that request."}}]})
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key=KEY,
                                          max_retries=0), env={})
        try:
            response = await model.complete(HELLO)
        finally:
            await model.aclose()
    assert response.text == "I can't help with that request."
