"""OpenAIModel against FakeOpenAIServer: the real SDK over a real loopback socket."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import time

import pytest
from aiohttp import web
from openai import AsyncOpenAI

from agent import SYSTEM_CLOCK, AgentSession, Clock, CompactionPolicy, Compactor, _errors
from agent._model import Model, ModelRequest, ToolCall, Usage
from agent.models import OpenAIModel
from agent.models._suspend import TICK
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
SEARCH_TOOL = {
    "type": "function",
    "function": {"name": "search", "description": "Search.", "parameters": {"type": "object", "properties": {}}},
}
# Retry-After "0" makes the SDK fall back to its own 0.5 s backoff; a tiny
# positive value is honoured as-is and keeps retry tests fast.
FAST_RETRY = {"retry-after": "0.01"}


@pytest.fixture
async def server():
    async with FakeOpenAIServer(api_key=KEY) as s:
        yield s


@pytest.fixture
async def make_model(server):
    models: list[OpenAIModel] = []

    def make(*, clock: Clock = SYSTEM_CLOCK, **overrides) -> OpenAIModel:
        fields = {"provider": "openai", "name": "gpt-test", "base_url": server.base_url, "api_key": KEY,
                  "timeout_seconds": 5.0, "max_retries": 0, **overrides}
        model = OpenAIModel(ModelSettings(**fields), env={}, clock=clock)
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()


async def raises_model_error(model: OpenAIModel, request: ModelRequest = HELLO) -> _errors.ModelError:
    with pytest.raises(_errors.ModelError) as info:
        await model.complete(request)
    return info.value


async def test_plain_text(server, make_model):
    server.push_text("hi there")
    model = make_model(context_window=32_000, supports_vision=True)
    assert isinstance(model, Model)
    assert (model.name, model.context_window, model.supports_vision) == ("gpt-test", 32_000, True)
    response = await model.complete(HELLO)
    assert response.text == "hi there"
    assert response.tool_calls == ()
    assert response.model == "gpt-test"
    sent = server.requests[0]
    assert sent["model"] == "gpt-test"
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert "tools" not in sent and "tool_choice" not in sent and "temperature" not in sent


async def test_tool_call_round_trip(server, make_model):
    server.push_tool_calls([{"id": "call_1", "name": "search", "arguments": '{"q": "cats"}'}])
    server.push_text("found cats")
    model = make_model(temperature=0.3)
    first = await model.complete(ModelRequest(messages=[{"role": "user", "content": "find"}], tools=[SEARCH_TOOL]))
    assert first.text is None
    assert first.tool_calls == (ToolCall(id="call_1", name="search", arguments='{"q": "cats"}'),)
    assert server.requests[0]["tools"] == [SEARCH_TOOL]
    assert server.requests[0]["tool_choice"] == "auto"
    assert server.requests[0]["temperature"] == 0.3

    history = [
        {"role": "user", "content": "find"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "cats"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 cats"},
    ]
    second = await model.complete(ModelRequest(messages=history, tools=[SEARCH_TOOL]))
    assert second.text == "found cats"
    assert server.requests[1]["messages"] == history


async def test_usage_and_cost(server, make_model):
    server.push_text("a", usage={"prompt_tokens": 120, "completion_tokens": 7, "cost": 0.00042})
    server.push_text("b", usage={"prompt_tokens": 5, "completion_tokens": 1})
    server.push_raw({"id": "x", "object": "chat.completion", "model": "m",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": "c"}}]})
    model = make_model()
    with_cost = await model.complete(HELLO)
    assert (with_cost.usage, with_cost.cost_usd) == (Usage(120, 7), 0.00042)
    without_cost = await model.complete(HELLO)
    assert (without_cost.usage, without_cost.cost_usd) == (Usage(5, 1), None)
    no_usage = await model.complete(HELLO)
    assert (no_usage.text, no_usage.usage, no_usage.cost_usd) == ("c", Usage(0, 0), None)


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -0.5])
async def test_a_cost_that_is_no_sum_of_dollars_counts_as_none_reported(server, make_model, cost):
    # Added up, a NaN made the session's cost NaN for good, and a negative one took off what was spent.
    server.push_text("a", usage={"prompt_tokens": 3, "completion_tokens": 1, "cost": cost})
    answer = await make_model().complete(HELLO)
    assert (answer.usage, answer.cost_usd) == (Usage(3, 1), None)


async def test_rate_limit_then_success_is_retried_by_the_sdk(server, make_model):
    server.push_error(429, headers=FAST_RETRY)
    server.push_text("after retry")
    response = await make_model(max_retries=1).complete(HELLO)
    assert response.text == "after retry"
    assert len(server.requests) == 2


async def test_rate_limit_exhausted(server, make_model):
    server.push_error(429, headers=FAST_RETRY)
    server.push_error(429, headers={"retry-after": "7"})
    started = time.monotonic()
    error = await raises_model_error(make_model(max_retries=1))
    assert time.monotonic() - started < 2
    assert (error.kind, error.status, error.retry_after) == ("rate_limited", 429, 7.0)
    assert len(server.requests) == 2
    assert error.__cause__.__class__.__name__ == "RateLimitError"


async def test_a_rate_limit_asking_for_a_wait_over_two_minutes_fails_at_once(server, make_model):
    server.push_error(429, headers={"retry-after": "3600"})
    server.push_text("an hour later")
    started = time.monotonic()
    error = await raises_model_error(make_model(max_retries=2))
    assert time.monotonic() - started < 2
    assert (error.kind, error.retry_after, len(server.requests)) == ("rate_limited", 3600.0, 1)


@pytest.mark.parametrize("date", ["Mon, 01 Jan 99999 00:00:00 GMT", "1 Jan 10000000000000000000 00:00:00 GMT"])
async def test_a_retry_after_date_no_clock_has_is_no_hint_not_a_crash(server, make_model, date):
    # The SDK takes it for no hint; reading it again for ModelError.retry_after raised ValueError out of
    # `complete`, and the turn crashed instead of failing as rate_limited.
    server.push_error(429, headers={"retry-after": date})
    error = await raises_model_error(make_model())
    assert (error.kind, error.status, error.retry_after) == ("rate_limited", 429, None)


async def test_server_error_exhausted(server, make_model):
    server.push_error(500, headers=FAST_RETRY)
    server.push_error(503, headers=FAST_RETRY)
    error = await raises_model_error(make_model(max_retries=1))
    assert (error.kind, error.status) == ("server_error", 503)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "bad_request"), (404, "not_found"), (422, "bad_request"), (403, "auth"), (402, "quota")]
)
async def test_client_errors_are_not_retried(server, make_model, status, kind):
    server.push_error(status)
    error = await raises_model_error(make_model(max_retries=2))
    assert (error.kind, error.status) == (kind, status)
    assert len(server.requests) == 1


async def test_timeout(server, make_model):
    server.push_hang()
    started = time.monotonic()
    error = await raises_model_error(make_model(timeout_seconds=0.2))
    assert time.monotonic() - started < 2
    assert error.kind == "timeout"
    assert error.__cause__.__class__.__name__ == "APITimeoutError"


async def test_an_answer_that_takes_too_long_is_not_asked_for_again(server, make_model):
    # The server has the whole request and may still be writing (and billing) the answer: asking
    # again pays for it twice and, for an answer that simply takes longer, times out the same way.
    server.push_delay(2, "too late")
    server.push_text("asked again")
    error = await raises_model_error(make_model(timeout_seconds=0.2, max_retries=2))
    assert error.kind == "timeout"
    assert len(server.requests) == 1  # counted, not timed: a retry is asked before the error is raised


@pytest.mark.parametrize("status", [408, 504, 524])
async def test_an_answer_a_proxy_gave_up_waiting_for_is_not_asked_for_again(server, make_model, status):
    # LiteLLM's 408, nginx's 504, Cloudflare's 524: the model behind may still be writing (and billing) the
    # answer, as after a timeout of our own; the SDK asked twice more, each paid and waited for in full.
    server.push_error(status, headers=FAST_RETRY)
    server.push_text("asked again")
    error = await raises_model_error(make_model(max_retries=2))
    assert (error.kind, error.status, len(server.requests)) == ("timeout", status, 1)


async def test_a_gateway_timeout_the_server_says_to_retry_is_asked_again(server, make_model):
    server.push_error(504, headers={**FAST_RETRY, "x-should-retry": "true"})
    server.push_text("asked again")
    assert (await make_model(max_retries=1).complete(HELLO)).text == "asked again"
    assert len(server.requests) == 2


async def test_an_answer_the_machine_slept_through_is_asked_for_again(server, make_model):
    # A night's suspend: the server answered (or gave up) hours ago, into a connection that is dead
    # now, and nothing tells the client; it waited out the rest of model.timeout_seconds (the
    # monotonic clock skipped the night) and failed the turn with a timeout, never asked again.
    clock = FakeClock(autojump=False)
    server.push_hang()
    server.push_text("after the night")
    model = make_model(timeout_seconds=120, max_retries=1, clock=clock)
    task = asyncio.create_task(model.complete(HELLO))
    await server.wait_for(lambda: server.requests)
    await clock.until_sleeping()
    clock.jump(8 * 3600)
    clock.advance(TICK)
    await server.wait_for(lambda: server.dropped == [0], timeout=10)
    assert (await task).text == "after the night"
    assert len(server.requests) == 2


async def test_an_answer_that_can_still_come_after_a_short_suspend_is_waited_for(server, make_model):
    # A server sends an unacknowledged answer again for about a quarter of an hour (Linux): after a
    # shorter suspend, on top of the time the answer may take, it can still arrive, and a request
    # asked again might be paid twice.
    clock = FakeClock(autojump=False)
    answer = asyncio.Event()

    async def slow(body):
        await answer.wait()
        return {"text": "worth the wait"}

    server.respond_with(slow)
    model = make_model(timeout_seconds=120, max_retries=1, clock=clock)
    task = asyncio.create_task(model.complete(HELLO))
    await server.wait_for(lambda: server.requests)
    await clock.until_sleeping()
    clock.jump(120 + 15 * 60)
    clock.advance(TICK)
    await clock.until_sleeping()  # looked, and went on waiting
    answer.set()
    assert (await task).text == "worth the wait"
    assert (len(server.requests), server.dropped) == (1, [])


async def test_connection_refused(make_model):
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = await raises_model_error(make_model(base_url=f"http://127.0.0.1:{port}/v1"))
    assert error.kind == "connection"
    assert error.status is None


async def test_tool_calls_without_an_id_get_one(server, make_model):
    server.push_tool_calls([{"id": None, "name": "search", "arguments": "{}"}])
    response = await make_model().complete(HELLO)
    assert response.tool_calls[0].id == "call_0_search"


async def test_arguments_sent_as_an_object_are_taken_as_its_json(server, make_model):
    # Some OpenAI-compatible servers send the object itself where OpenAI sends its JSON text.
    server.push_tool_calls([{"id": "c", "name": "search", "arguments": {"q": "café", "n": 1}}])
    response = await make_model().complete(HELLO)
    assert response.tool_calls == (ToolCall(id="c", name="search", arguments='{"q": "café", "n": 1}'),)


async def test_invalid_json_arguments_are_passed_through_raw(server, make_model):
    server.push_tool_calls([{"id": "c", "name": "search", "arguments": '{"q": "unterminated'}])
    response = await make_model().complete(HELLO)
    assert response.tool_calls == (ToolCall(id="c", name="search", arguments='{"q": "unterminated'),)


@pytest.mark.parametrize(
    "script",
    [
        lambda s: s.push_tool_calls([{"arguments": "{}"}]),  # no function name
        lambda s: s.push_tool_calls([{"name": "search", "arguments": ["q", 1]}]),  # arguments neither JSON nor an object
        lambda s: s.push_raw({"id": "x", "object": "chat.completion", "choices": []}),
        lambda s: s.push_raw('{"choices": [', content_type="application/json"),  # broken JSON
        lambda s: s.push_raw("<html>oops</html>", content_type="text/html"),
        lambda s: s.push_raw("[" * 100_000 + "]" * 100_000),  # RecursionError out of the SDK's json.loads
    ],
    ids=["no-name", "list-arguments", "no-choices", "broken-json", "html", "nested-too-deep"],
)
async def test_malformed_responses(server, make_model, script):
    script(server)
    error = await raises_model_error(make_model())
    assert error.kind == "malformed"


async def test_api_key_never_in_error_text(server, make_model):
    # Some servers echo the key they got; ours must not pass it on.
    server.push_error(401, body={"error": {"message": f"Incorrect API key provided: {KEY}"}})
    server.push_error(400, body={"error": {"message": f"bad request from {KEY}"}})
    model = make_model()
    for kind in ("auth", "bad_request"):
        error = await raises_model_error(model)
        assert error.kind == kind
        assert KEY not in str(error) and KEY not in repr(error)
        assert "[redacted]" in str(error)


async def test_a_token_given_as_the_base_urls_user_name_never_in_error_text():
    # A proxy's token rides as the URL's user name alone (no password): the SDK sends it as a Basic header,
    # and a server that echoes what it got must not have it passed on to the chat, as a password is not.
    token = "tk-s3cret-4417"
    basic = base64.b64encode(f"{token}:".encode()).decode()
    async with FakeOpenAIServer() as server:
        server.push_error(401, body={"error": {"message": f"no entry for {token} (Basic {basic})"}})
        base_url = server.base_url.replace("http://", f"http://{token}@")
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=base_url, max_retries=0), env={})
        try:
            error = await raises_model_error(model)
        finally:
            await model.aclose()
    assert server.authorizations == [f"Basic {basic}"]
    assert error.kind == "auth"
    assert token not in str(error) and basic not in str(error) and "[redacted]" in str(error)


@pytest.mark.parametrize("written_in", ["model.base_url", "$OPENAI_BASE_URL"])
async def test_a_password_in_the_base_url_never_in_error_text(written_in):
    # base_url: http://user:password@host/v1 (a proxy with basic auth): the SDK sends it as a Basic
    # header, and a server that echoes what it got must not have it passed on to the chat.
    password = "pw-s3cret-9"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    async with FakeOpenAIServer() as server:
        base_url = server.base_url.replace("http://", f"http://alice:{password}@")
        server.push_error(401, body={"error": {"message": f"no entry for alice:{password} (Basic {basic})"}})
        if written_in == "model.base_url":
            settings, env = ModelSettings(provider="openai", name="m", base_url=base_url, max_retries=0), {}
        else:
            settings, env = ModelSettings(provider="openai", name="m", max_retries=0), {"OPENAI_BASE_URL": base_url}
        model = OpenAIModel(settings, env=env)
        try:
            error = await raises_model_error(model)
        finally:
            await model.aclose()
    assert server.authorizations == [f"Basic {basic}"]
    assert error.kind == "auth"
    assert password not in str(error) and basic not in str(error) and "[redacted]" in str(error)


@pytest.mark.parametrize("written_in", ["model.base_url", "$OPENAI_BASE_URL"])
async def test_a_password_in_the_base_url_never_in_the_log(written_in, caplog):
    # The HTTP client logs each URL it requests (INFO), as given: a password from $OPENAI_BASE_URL is no
    # setting the gateway's redaction knows of. It is still sent, as the Basic credentials.
    caplog.set_level(logging.DEBUG)
    password = "pw-s3cret-9"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    async with FakeOpenAIServer() as server:
        base_url = server.base_url.replace("http://", f"http://alice:{password}@")
        if written_in == "model.base_url":
            settings, env = ModelSettings(provider="openai", name="m", base_url=base_url, max_retries=0), {}
        else:
            settings, env = ModelSettings(provider="openai", name="m", max_retries=0), {"OPENAI_BASE_URL": base_url}
        model = OpenAIModel(settings, env=env)
        try:
            assert (await model.complete(HELLO)).text == "ok"
        finally:
            await model.aclose()
    assert server.authorizations == [f"Basic {basic}"]
    assert "HTTP Request: POST http://127.0.0.1:" in caplog.text
    assert password not in caplog.text and basic not in caplog.text


async def test_wrong_key_is_auth_error(server, make_model):
    error = await raises_model_error(make_model(api_key="sk-wrong-key"))
    assert (error.kind, error.status) == ("auth", 401)


async def test_api_key_from_env_then_placeholder(server):
    settings = ModelSettings(provider="openai", name="m", base_url=server.base_url, max_retries=0)
    from_env = OpenAIModel(settings, env={"OPENAI_API_KEY": KEY})
    placeholder = OpenAIModel(settings, env={})
    try:
        assert (await from_env.complete(HELLO)).text == "ok"
        assert (await raises_model_error(placeholder)).kind == "auth"  # sent "Bearer not-set"
    finally:
        await from_env.aclose()
        await placeholder.aclose()


async def test_cancellation_propagates_promptly(server, make_model):
    # Promptly: the server sees the connection dropped while it still waits to answer, not once it
    # answers 20 s later; no wall-clock bound, which a loaded machine can miss.
    server.push_delay(20, "too late")
    server.push_text("still usable")
    model = make_model(timeout_seconds=60)
    task = asyncio.create_task(model.complete(HELLO))
    await server.wait_for(lambda: server.requests)
    task.cancel()
    await server.wait_for(lambda: server.dropped == [0], timeout=30)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await model.complete(HELLO)).text == "still usable"


async def test_fake_server_lists_models_and_rejects_bad_bearer(server, make_model):
    model = make_model()
    listed = await model._client.models.list()
    assert [m.id for m in listed.data] == ["fake-model"]
    # Rejected requests are still recorded, and do not consume scripted replies.
    server.push_text("kept")
    assert (await raises_model_error(make_model(api_key="nope"))).kind == "auth"
    assert (await model.complete(HELLO)).text == "kept"
    assert len(server.requests) == 2 and json.dumps(server.requests[0])



async def test_fake_server_answers_by_content_records_authorization_and_wakes_waiters(server, make_model):
    server.push_text("from the queue")
    server.respond_with(lambda body: {"text": "echo " + body["messages"][-1]["content"]}
                        if body["messages"][-1]["content"] != "pass" else None)
    model = make_model()
    waiting = asyncio.ensure_future(server.wait_for(lambda: len(server.requests) == 2))
    assert (await model.complete(HELLO)).text == "echo hello"
    assert (await model.complete(ModelRequest(messages=[{"role": "user", "content": "pass"}]))).text == "from the queue"
    await waiting
    assert server.authorizations == [f"Bearer {KEY}"] * 2
    server.respond_with(lambda body: {"tool_calls": [{"name": "f", "arguments": "{}"}], "text": "calling"})
    response = await model.complete(HELLO)
    assert (response.text, [c.name for c in response.tool_calls]) == ("calling", ["f"])
    server.respond_with(None)
    assert (await model.complete(HELLO)).text == "ok"
    with pytest.raises(TimeoutError):
        await server.wait_for(lambda: False, timeout=0.01)


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        ({"message": "Rate limit exceeded: free-models-per-min", "code": 429}, "rate_limited", 429),
        ({"message": "Provider returned error", "code": 502}, "server_error", 502),
        ({"message": "Insufficient credits", "code": 402}, "quota", 402),
        ({"message": "Upstream unavailable"}, "server_error", None),
        ({"message": "Upstream timed out", "code": 408}, "timeout", 408),
    ],
    ids=["429", "502", "402", "no-code", "408"],
)
async def test_an_error_in_a_200_body_keeps_the_servers_reason(server, make_model, error, kind, status):
    # OpenRouter commits to 200 before the upstream model runs; a later failure rides the body.
    server.push_raw({"error": {**error, "message": f"{error['message']} (key {KEY})"}})
    failure = await raises_model_error(make_model())
    assert (failure.kind, failure.status) == (kind, status)
    assert error["message"] in str(failure)
    assert KEY not in str(failure) and "[redacted]" in str(failure)


@pytest.mark.parametrize(("finish_reason", "truncated"), [("length", True), ("stop", False), (None, False)])
async def test_an_answer_cut_off_at_the_output_limit_is_marked(server, make_model, finish_reason, truncated):
    server.push_raw({"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-test",
                     "choices": [{"index": 0, "finish_reason": finish_reason,
                                  "message": {"role": "assistant", "content": "The steps are: first"}}]})
    response = await make_model().complete(HELLO)
    assert (response.text, response.truncated) == ("The steps are: first", truncated)


async def test_a_lone_surrogate_from_the_server_never_reaches_the_conversation(server, make_model):
    # A server that splits an emoji's \ud83d\ude00 escape (or streams half of it) sends a lone
    # surrogate: Python decodes it, but no UTF-8 encoder takes it back, the SDK's included.
    server.push_raw('{"id": "c", "object": "chat.completion", "created": 0, "model": "m-\\ud83d",'
                    ' "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "half \\ud83d smile",'
                    ' "tool_calls": [{"id": "t", "type": "function", "function": {"name": "search",'
                    ' "arguments": "{\\"q\\": \\"\\ude00\\"}"}}]}}]}')
    model = make_model()
    response = await model.complete(HELLO)
    assert response.text == "half \ufffd smile"
    assert response.tool_calls[0].arguments == '{"q": "\ufffd"}'
    assert response.model == "m-\ufffd"  # the model that answered: logged, a metric's label, a span's name
    response.text.encode()


async def test_a_lone_surrogate_in_the_conversation_is_sent_as_a_replacement_character(server, make_model):
    # Text from elsewhere (a browser's broken paste, a tool) may hold one too: the request is still sent.
    server.push_text("fine")
    history = [{"role": "user", "content": [{"type": "text", "text": "broken \udc80 paste"}]},
               {"role": "assistant", "content": "ok \ud800"}, {"role": "user", "content": "and?"}]
    response = await make_model().complete(ModelRequest(messages=history))
    assert response.text == "fine"
    assert server.requests[0]["messages"][:2] == [
        {"role": "user", "content": [{"type": "text", "text": "broken \ufffd paste"}]},
        {"role": "assistant", "content": "ok \ufffd"}]
    assert history[1]["content"] == "ok \ud800"  # the caller's messages are not changed


@pytest.mark.parametrize(("status", "code", "kind"), [
    (429, "insufficient_quota", "quota"), (400, "content_filter", "content_filter"),
    (400, "context_length_exceeded", "bad_request"), (429, "rate_limit_exceeded", "rate_limited"),
])
async def test_failures_no_retry_cures_are_told_by_their_error_code(server, make_model, status, code, kind):
    server.push_error(status, {"error": {"message": "no", "type": "invalid_request_error", "param": None, "code": code}},
                      headers=FAST_RETRY)
    server.push_error(status, {"error": {"message": "no", "type": "invalid_request_error", "param": None, "code": code}},
                      headers=FAST_RETRY)
    assert (await raises_model_error(make_model(max_retries=1))).kind == kind


async def test_an_answer_the_content_filter_withheld_is_a_failure_of_its_own(server, make_model):
    server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": None}}]})
    server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": "Partly"}}]})
    model = make_model()
    assert (await raises_model_error(model)).kind == "content_filter"
    assert (await model.complete(HELLO)).text == "Partly"


@pytest.mark.parametrize(("content", "text"), [
    ("<think>\nThe user greets me.\n</think>\n\nHello!", "Hello!"),
    ("  <think>plan</think>Hello!", "Hello!"),
    ("<think>cut off at the output limit while still thinking", ""),
    ("Tags look like <think>this</think>.", "Tags look like <think>this</think>."),
], ids=["block", "leading-space", "unclosed", "mid-text"])
async def test_the_reasoning_a_server_leaves_in_the_answer_is_not_the_answer(server, make_model, content, text):
    # vLLM without a reasoning parser, llama.cpp's --reasoning-format none: DeepSeek-R1 and Qwen3
    # write their reasoning into `content`, in a <think> block before the answer.
    server.push_text(content)
    assert (await make_model().complete(HELLO)).text == text


async def test_without_a_base_url_the_model_calls_the_server_openai_base_url_names(server):
    # The SDK's own convention, honoured like $OPENAI_API_KEY; the start checks this same server.
    server.push_text("from the server the environment names")
    model = OpenAIModel(ModelSettings(provider="openai", name="m", api_key=KEY, max_retries=0),
                        env={"OPENAI_BASE_URL": server.base_url})
    try:
        assert (await model.complete(HELLO)).text == "from the server the environment names"
    finally:
        await model.aclose()


async def test_without_a_base_url_or_openai_base_url_the_model_calls_openai(server, monkeypatch):
    # Resolved by us from the env given, not by the SDK from the process's: nothing else is consulted.
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    with socket.socket() as sock:  # api.openai.com through a proxy nobody listens on: nothing leaves the machine
        sock.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{sock.getsockname()[1]}")
    model = OpenAIModel(ModelSettings(provider="openai", name="m", api_key=KEY, max_retries=0), env={})
    try:
        assert (await raises_model_error(model)).kind == "connection"
    finally:
        await model.aclose()
    assert server.requests == []


OVERFLOWS = {
    "groq-code-only": (400, {"error": {"message": "Please reduce the length of the messages or completion.",
                                       "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    "openai-gpt-5": (400, {"error": {"message": "Input tokens exceed the configured limit of 272000 tokens. Your "
                                                "messages resulted in 289650 tokens.",
                                     "code": "context_length_exceeded"}}),
    "vllm-v1": (400, {"object": "error", "message": "The decoder prompt (length 9000) is longer than the maximum model "
                                                    "length of 8192.", "type": "BadRequestError", "code": 400}),
    "lm-studio-string": (400, {"error": "The number of tokens to keep from the initial prompt is greater than the "
                                        "context length (n_keep: 13055>= n_ctx: 4096)."}),
    "gemini-list": (400, [{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "The input token count "
                                     "(1200293) exceeds the maximum number of tokens allowed (1048576)."}}]),
    "plain-text": (400, "Error: prompt is too long for this model"),
}


@pytest.mark.parametrize("refusal", OVERFLOWS.values(), ids=OVERFLOWS.keys())
async def test_each_servers_context_overflow_refusal_is_compacted_and_asked_again(server, make_model, refusal):
    status, body = refusal
    if isinstance(body, str):
        server.push_raw(body, status=status, content_type="text/plain")
    else:
        server.push_error(status, body)
    server.push_text("a summary")
    server.push_text("the answer")
    compactor = Compactor(CompactionPolicy(keep_recent_messages=2))
    session = AgentSession(model=make_model(), system_prompt="sys", compactor=compactor)
    session.messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"old {i}"} for i in range(8)]
    result = await session.run_turn("hello")
    assert (result.exit_reason, result.text, compactor.compactions) == ("completed", "the answer", 1)


@pytest.mark.parametrize("body", [
    {"error": f"model is loading, key {KEY}"}, [{"error": {"message": f"model is loading, key {KEY}"}}],
    f"model is loading, key {KEY}",
], ids=["string-error", "list", "plain-text"])
async def test_the_failure_logged_keeps_the_servers_words_in_any_body_shape(server, make_model, body, caplog):
    if isinstance(body, str):
        server.push_raw(body, status=400, content_type="text/plain")
    else:
        server.push_error(400, body)
    with caplog.at_level(logging.WARNING, logger="agent.session"):
        result = await AgentSession(model=make_model()).run_turn("hello")
    assert result.exit_reason == "error"
    assert "model is loading, key [redacted]" in result.error
    assert "model is loading, key [redacted]" in caplog.text and KEY not in caplog.text


@pytest.mark.parametrize("key", ["sk-abc\u200bdef-123", "sk-abcdef-123\n", "sk-abc\u2011def-123", "sk-abc def-123"],
                         ids=["zero-width-space", "trailing-newline", "non-breaking-hyphen", "space"])
async def test_a_key_with_a_stray_character_fails_as_a_refused_key_naming_the_setting(server, make_model, key):
    # A non-ASCII character crashed the turn (httpx cannot encode the header); a newline read as a
    # connection error, asked again max_retries times.
    result = await AgentSession(model=make_model(api_key=key, max_retries=2)).run_turn("hi")
    assert (result.exit_reason, result.error_kind) == ("error", "auth")
    assert "model.api_key" in result.error and key.strip() not in result.error
    assert server.requests == []


async def test_a_key_with_a_stray_character_from_the_environment_is_named_there_and_stops_the_start(server):
    from gateway.errors import StartupError
    from gateway.preflight import check_model

    settings = ModelSettings(provider="openai", name="m", base_url=server.base_url, max_retries=0)
    env = {"OPENAI_API_KEY": KEY + "\u200b"}
    model = OpenAIModel(settings, env=env)
    try:
        error = await raises_model_error(model)
    finally:
        await model.aclose()
    assert error.kind == "auth" and "$OPENAI_API_KEY" in str(error) and KEY not in str(error)
    with pytest.raises(StartupError, match=r"\$OPENAI_API_KEY holds a character no API key has") as info:
        await check_model(settings, env=env)
    assert KEY not in str(info.value)


async def test_a_header_no_client_can_encode_is_a_failed_request_not_a_crash(server):
    # A client given ready-made (its key unchecked) sends what it holds: the retry that mends lone
    # surrogates in the messages cannot mend a header, and its failure must not escape `complete`.
    client = AsyncOpenAI(api_key="sk-\u200b-injected", base_url=server.base_url, max_retries=0)
    model = OpenAIModel(ModelSettings(provider="openai", name="m"), client=client, env={})
    try:
        error = await raises_model_error(model)
    finally:
        await client.close()
    assert error.kind == "bad_request"
    assert server.requests == []


async def test_an_answer_trickled_a_byte_at_a_time_is_bounded_by_the_timeout_as_a_whole():
    # httpx's read timeout is between two bytes: whitespace sent every 0.05 s kept the request alive for ever.
    requests = []

    async def trickle(request):
        requests.append(await request.read())
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for _ in range(200):
            await response.write(b" ")
            await asyncio.sleep(0.05)  # the slow server's pace, well inside the 0.5 s between two bytes
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", trickle)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    model = OpenAIModel(ModelSettings(provider="openai", name="m", api_key=KEY, timeout_seconds=0.5, max_retries=2,
                                      base_url=f"http://127.0.0.1:{runner.addresses[0][1]}/v1"), env={})
    try:
        started = time.monotonic()
        error = await raises_model_error(model)
    finally:
        await model.aclose()
        await runner.cleanup()
    assert time.monotonic() - started < 3
    assert (error.kind, len(requests)) == ("timeout", 1)
