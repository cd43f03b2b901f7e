"""OpenAIModel at the edges of a model call: a request too large for a proxy's body limit (413), tool calls
whose arguments are null, an auth failure inside a 200 body. The real SDK over loopback sockets."""

from __future__ import annotations

import logging

import pytest

from agent import AgentSession, CompactionPolicy, Compactor, ModelError, exceeds_context
from agent._errors import BODY_TOO_LARGE
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
NGINX_413 = ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request "
             "Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
PHOTO = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + "A" * 200_000}}


@pytest.fixture
async def server():
    async with FakeOpenAIServer(api_key=KEY) as s:
        yield s


@pytest.fixture
async def make_model(server):
    models: list[OpenAIModel] = []

    def make(**overrides) -> OpenAIModel:
        fields = {"provider": "openai", "name": "gpt-test", "base_url": server.base_url, "api_key": KEY,
                  "timeout_seconds": 5.0, "max_retries": 2, **overrides}
        model = OpenAIModel(ModelSettings(**fields), env={})
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()


def with_old_photo(session: AgentSession) -> AgentSession:
    session.messages += [
        {"role": "user", "content": [{"type": "text", "text": "what is in this photo?"}, PHOTO]},
        {"role": "assistant", "content": "a cat"},
        *({"role": "user" if i % 2 == 0 else "assistant", "content": f"old {i}"} for i in range(4)),
    ]
    return session


async def test_a_413_is_a_request_too_large_naming_the_status_and_the_bytes_sent(server, make_model):
    # It was a plain bad_request: never compacted, and the chat was told to try again in a moment, for good.
    server.push_raw(NGINX_413, status=413, content_type="text/html")
    with pytest.raises(ModelError) as caught:
        await make_model(supports_vision=True).complete(ModelRequest(messages=[{"role": "user", "content": [PHOTO]}]))
    error = caught.value
    assert (error.kind, error.status, len(server.requests)) == ("bad_request", 413, 1)  # not asked again
    assert BODY_TOO_LARGE in str(error) and "bytes sent" in str(error)
    assert error.context_exceeded and exceeds_context(str(error))


async def test_a_413_compacts_the_old_photo_away_and_asks_once_more(server, make_model, caplog):
    server.push_raw(NGINX_413, status=413, content_type="text/html")
    server.push_text("a summary")
    server.push_text("the answer")
    compactor = Compactor(CompactionPolicy(keep_recent_messages=2))
    session = with_old_photo(AgentSession(model=make_model(supports_vision=True), system_prompt="sys",
                                          compactor=compactor))
    with caplog.at_level(logging.WARNING, logger="agent.session"):
        result = await session.run_turn("hello")
    assert (result.exit_reason, result.text, compactor.compactions) == ("completed", "the answer", 1)
    assert "image_url" in str(server.requests[0]["messages"])
    assert "image_url" not in str(server.requests[-1]["messages"])
    # The operator is told what to raise, not pointed at a setting that is not wrong.
    assert "HTTP 413" in caplog.text and "client_max_body_size" in caplog.text
    assert "model.context_window" not in caplog.text


async def test_a_413_compaction_cannot_cure_ends_the_turn_as_too_long_without_looping(server, make_model):
    server.push_raw(NGINX_413, status=413, content_type="text/html")
    server.push_text("a summary")
    server.push_raw(NGINX_413, status=413, content_type="text/html")
    server.push_text("never asked for")
    session = with_old_photo(AgentSession(model=make_model(supports_vision=True), system_prompt="sys",
                                          compactor=Compactor(CompactionPolicy(keep_recent_messages=2))))
    result = await session.run_turn([{"type": "text", "text": "and this one?"}, PHOTO])
    assert result.exit_reason == "error" and result.error_kind == "bad_request"
    assert BODY_TOO_LARGE in result.error and exceeds_context(result.error)  # the chat reads: grown too long
    assert len(server.requests) == 3  # the call, the summary, the call once more


async def test_a_413_with_nothing_to_compact_ends_the_turn_at_once(server, make_model):
    server.push_raw(NGINX_413, status=413, content_type="text/html")
    session = AgentSession(model=make_model(supports_vision=True), compactor=Compactor())
    result = await session.run_turn([{"type": "text", "text": "look"}, PHOTO])
    assert (result.exit_reason, len(server.requests)) == ("error", 1)
    assert BODY_TOO_LARGE in result.error


async def test_tool_call_arguments_sent_as_null_or_not_at_all_are_no_arguments(server, make_model):
    # vLLM and Ollama send null for a call of a tool without parameters: the whole answer failed as malformed.
    server.push_tool_calls([{"name": "now", "arguments": None, "id": "c1"}])
    server.push_raw({"id": "x", "object": "chat.completion", "model": "gpt-test", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "now"}}]}}]})
    model = make_model()
    for call_id in ("c1", "c2"):
        response = await model.complete(ModelRequest(messages=[{"role": "user", "content": "time?"}]))
        assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [(call_id, "now", "{}")]


@pytest.mark.parametrize("code", [401, 403])
async def test_an_auth_failure_in_a_200_body_names_the_model_and_server(server, make_model, code):
    # OpenRouter sends a key it no longer knows as {"error": {"code": 401}} in a 200 body; an HTTP 401 named
    # the model and server, this one did not.
    server.push_raw({"error": {"message": f"User not found (key {KEY})", "code": code}})
    with pytest.raises(ModelError) as caught:
        await make_model(name="route-model").complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert caught.value.kind == "auth"
    assert f"(model 'route-model' at {server.base_url})" in str(caught.value)
    assert KEY not in str(caught.value)
