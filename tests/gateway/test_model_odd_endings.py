"""What the chat reads after a model's odd ending: an answer its provider's content filter cut short, a rate
limit asking for a long wait, a tool name the model made up. The openai provider against a fake server,
through the gateway."""

from __future__ import annotations

import re

import pytest
from aiohttp import web

from agent import TurnResult, Usage
from agent.testing import FakeOpenAIServer
from gateway.replies import FILTERED, MODEL_BUSY, MODEL_FAILED, RESULTS_FILTERED, WITHHELD, reply_text
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model


def filtered(content: str | None) -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": content}}]}


async def test_an_answer_the_content_filter_cut_short_says_the_rest_was_withheld(tmp_path, llm, gateways):
    # It read as the whole answer. What was written is kept, in the conversation too.
    server = await llm()
    server.push_raw(filtered("Here is the first part of"))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == f"Here is the first part of\n\n{WITHHELD}"
    await ask(chat, gateway, "and?")
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": "Here is the first part of"}


async def test_a_withheld_answer_of_only_the_models_thinking_is_a_filtered_one(tmp_path, llm, gateways):
    # Its reasoning dropped, nothing was left: the chat read that the model wrote no answer, and to try again.
    server = await llm()
    server.push_raw(filtered("<think>\nThey ask about that; let me explain.\n</think>\n\n"))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == FILTERED


@pytest.mark.parametrize(("retry_after", "reply"), [
    ("3600", MODEL_BUSY.format(wait="an hour")),
    ("7000", MODEL_BUSY.format(wait="2 hours")),
    ("600", MODEL_BUSY.format(wait="10 minutes")),
    ("172800", MODEL_BUSY.format(wait="2 days")),
], ids=["hour", "hours", "minutes", "days"])
async def test_a_rate_limit_asking_for_a_long_wait_says_when_to_try_again(tmp_path, llm, gateways, retry_after,
                                                                          reply):
    # Over the SDK's two minutes, a 429 fails at once: "try again in a moment" sent the user back into it.
    server = await llm()
    server.push_error(429, headers={"retry-after": retry_after})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, max_retries=2)), [chat])
    assert await ask(chat, gateway, "hello") == reply
    assert len(server.requests) == 1


def failed(retry_after: float | None, text: str = "") -> TurnResult:
    return TurnResult("t-1", text, "error", 1, Usage(), None, 0.1, (), error="model request failed (rate_limited): "
                      "Rate limit reached", error_kind="rate_limited", retry_after=retry_after)


@pytest.mark.parametrize(("retry_after", "wait"), [
    (None, None), (0.0, None), (59.0, None), (float("inf"), None), (float("nan"), None), (60.0, "a minute"),
    (89.0, "a minute"), (91.0, "2 minutes"), (3569.0, "59 minutes"), (3571.0, "an hour"), (5399.0, "an hour"),
    (5401.0, "2 hours"), (47.4 * 3600, "47 hours"), (47.6 * 3600, "2 days"), (10 * 86400, "10 days"),
])
def test_the_wait_is_said_rounded_and_only_when_longer_than_a_moment(retry_after, wait):
    expected = MODEL_FAILED if wait is None else MODEL_BUSY.format(wait=wait)
    assert reply_text("reply", failed(retry_after)) == expected
    assert reply_text("reply", failed(retry_after, "Partly")) == f"Partly\n\n({expected})"


_NAME = re.compile(r"[a-zA-Z0-9_-]+")


class NameCheckingServer(FakeOpenAIServer):
    """Refuses, as OpenAI does, a request holding a past tool call whose name is not 1 to 64 letters, digits,
    ``_`` or ``-``: every later request of such a conversation."""

    async def _answer(self, request: web.Request, body):
        for index, message in enumerate(body["messages"]):
            for number, call in enumerate(message.get("tool_calls") or ()):
                name, param = call["function"]["name"], f"messages[{index}].tool_calls[{number}].function.name"
                if not _NAME.fullmatch(name):
                    problem = "string does not match pattern. Expected a string that matches the pattern " \
                              "'^[a-zA-Z0-9_-]+$'."
                elif len(name) > 64:
                    problem = f"string too long. Expected a string with maximum length 64, but got a string " \
                              f"with length {len(name)} instead."
                else:
                    continue
                error = {"message": f"Invalid '{param}': {problem}", "type": "invalid_request_error",
                         "param": param, "code": "invalid_value"}
                return web.json_response({"error": error}, status=400)
        return await super()._answer(request, body)


@pytest.fixture
async def strict_llm():
    async with NameCheckingServer() as server:
        yield server


async def test_a_tool_name_the_model_made_up_does_not_break_the_conversation(tmp_path, strict_llm, gateways):
    # Kept as the model wrote it, each later request of the chat was refused until /new.
    server, long_name = strict_llm, "lookup_" + "x" * 70
    server.push_tool_calls([{"id": "c1", "name": "functions.read_file", "arguments": '{"path": "a.txt"}'},
                            {"id": "c2", "name": "search the web", "arguments": "{}"},
                            {"id": "c3", "name": long_name, "arguments": "{}"}])
    server.push_text("Sorry, I have no such tools.")
    server.push_text("still here")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "read a.txt") == "Sorry, I have no such tools."
    assert await ask(chat, gateway, "and now?") == "still here"
    sent = server.requests[-1]["messages"]
    [calls] = [m["tool_calls"] for m in sent if m.get("tool_calls")]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [
        ("c1", "functions_read_file"), ("c2", "search_the_web"), ("c3", long_name[:64])]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results["c1"].startswith("Error: unknown tool 'functions.read_file'")  # as the model wrote it
    assert results["c2"].startswith("Error: unknown tool 'search the web'")


def test_background_results_the_content_filter_blocked_are_not_asked_to_be_put_another_way():
    blocked = TurnResult("t-1", "", "error", 1, Usage(), None, 0.1, (), error="model request failed (content_filter):"
                         " filtered", error_kind="content_filter")
    assert reply_text("reply", blocked) == FILTERED
    assert reply_text("completion", blocked) == RESULTS_FILTERED
