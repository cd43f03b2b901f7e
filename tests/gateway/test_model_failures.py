"""What the chat reads when the model misbehaves: the openai provider against a fake server,
through the gateway."""

from __future__ import annotations

import json
import logging

import pytest

from agent._compaction import SUMMARY_HEADER, SUMMARY_PROMPT
from gateway.replies import AUTH_REFUSED, FILTERED, MODEL_FAILED, NO_SUCH_MODEL, OUT_OF_CREDIT, SUMMARY_FAILED, TOO_LONG
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

KEY = "sk-proj-secret-0123456789"


async def test_half_an_emoji_from_the_model_does_not_break_the_conversation(tmp_path, llm, gateways):
    server = await llm()
    server.push_raw('{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0,'
                    ' "finish_reason": "stop", "message": {"role": "assistant", "content": "smile \\ud83d"}}]}')
    server.push_text("still here")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == "smile \ufffd"
    assert await ask(chat, gateway, "and again") == "still here"


async def test_a_tool_call_whose_arguments_are_not_json_does_not_break_the_conversation(tmp_path, llm, gateways):
    # Servers that parse the conversation's tool calls (vLLM) refuse each request of one holding a call whose
    # arguments are not JSON: the call is kept with none, in the transcript too, and the chat goes on after a
    # restart. The model still reads why the call was not run.
    server = await llm()
    server.push_tool_calls([{"id": "c1", "name": "memory", "arguments": '{"action": "add", "text": "cut sh'}])
    server.push_text("Sorry, let me try that again.")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "Sorry, let me try that again."
    await gateway.stop(grace=0)
    again = RecordingAdapter()
    assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    sent = server.requests[-1]["messages"]
    assert [c["function"]["arguments"] for m in sent for c in m.get("tool_calls") or ()] == ["{}"]
    [told] = [m["content"] for m in sent if m["role"] == "tool"]
    assert told.startswith("Error: tool arguments are not valid JSON (Unterminated string")


def error(status: int, message: str, code: str | None, kind: str | None = "invalid_request_error") -> tuple:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


@pytest.mark.parametrize(("failure", "reply"), [
    (error(401, f"Incorrect API key provided: {KEY}.", "invalid_api_key"), AUTH_REFUSED),
    (error(403, "Project does not have access to model `gpt-x`", "model_not_found"), AUTH_REFUSED),
    (error(404, "The model `gpt-x` does not exist or you do not have access to it.", "model_not_found"), NO_SUCH_MODEL),
    (error(429, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota",
           "insufficient_quota"), OUT_OF_CREDIT),
    (error(402, "Insufficient credits. Add more using https://openrouter.ai/settings/credits", None), OUT_OF_CREDIT),
    (error(400, "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
           "content_filter", None), FILTERED),
    (error(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
           "context_length_exceeded"), TOO_LONG),
    (error(500, "The server had an error while processing your request.", None, "server_error"), MODEL_FAILED),
], ids=["401", "403", "404", "quota", "402", "filtered", "context", "500"])
async def test_a_model_failure_trying_again_cannot_cure_says_what_is_wrong(tmp_path, llm, gateways, caplog, failure,
                                                                           reply):
    server = await llm()
    server.push_error(*failure)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, api_key=KEY)), [chat])
    assert await ask(chat, gateway, "hello") == reply
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "gateway.replies")
    assert failure[1]["error"]["message"].replace(KEY, "[redacted]") in logged
    assert KEY not in logged


async def test_an_answer_the_content_filter_withheld_says_so(tmp_path, llm, gateways):
    server = await llm()
    server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": None}}]})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == FILTERED


async def test_the_models_thinking_left_in_its_answer_stays_out_of_the_chat(tmp_path, llm, gateways):
    server = await llm()
    server.push_text("<think>\nThey said hello; greet them back.\n</think>\n\nHello!")
    server.push_text("Bye!")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == "Hello!"
    await ask(chat, gateway, "bye")
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": "Hello!"}


async def test_an_account_out_of_credit_is_told_at_once_not_retried(tmp_path, llm, gateways):
    # OpenAI answers 429 for an empty account too; unlike a rate limit, no wait cures it.
    server = await llm()
    server.push_error(*error(429, "You exceeded your current quota, please check your plan and billing details.",
                             "insufficient_quota", "insufficient_quota"))
    server.push_text("answered on a retry")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, max_retries=2)), [chat])
    assert await ask(chat, gateway, "hello") == OUT_OF_CREDIT
    assert len(server.requests) == 1


def summarising(body: dict) -> bool:
    return body["messages"][0]["content"] == SUMMARY_PROMPT


async def test_a_conversation_over_the_servers_real_window_is_compacted_and_goes_on(tmp_path, llm, gateways,
                                                                                    caplog):
    # model.context_window says 128,000 (the default), the server takes 2,500: the estimate never asks for
    # compaction, the server's first refusal does, and the window it names drives compaction from then on.
    caplog.set_level(logging.INFO, logger="agent.context_window")
    server = await llm(context_window=2_500)
    turns = iter(range(1, 100))
    server.respond_with(lambda body: {"text": "SUMMARY: the user asked about topics 1 to n." if summarising(body)
                                      else f"answer {next(turns)}"})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    for n in range(1, 14):
        assert await ask(chat, gateway, f"topic {n}: " + "words " * 300) == f"answer {n}"
    refused = [i for i, body in enumerate(server.requests) if _refused(server, body)]
    assert len(refused) == 1  # later turns, and their summariser, keep within the window the server named
    assert sum(summarising(body) for body in server.requests[refused[0] + 3:]) >= 2
    for i in refused:
        refused_body, summariser, retried = server.requests[i:i + 3]
        assert summarising(summariser) and not summarising(retried)
        assert retried["messages"][1]["content"].startswith(SUMMARY_HEADER + "\nSUMMARY:")
        assert retried["messages"][-1] == refused_body["messages"][-1]  # the user's newest message, word for word
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "context_window" in
                r.getMessage()]
    assert len(warnings) == 1 and "model.context_window" in warnings[0]
    learned = [r.getMessage() for r in caplog.records if r.name == "agent.context_window"]
    assert len(learned) == 1 and "2500 tokens" in learned[0]


def _refused(server, body: dict) -> bool:
    return len(json.dumps(body["messages"])) // 4 > server.context_window


@pytest.mark.parametrize("failure", ["malformed", "timeout"])
async def test_a_summary_the_model_could_not_write_is_told_in_the_reply_and_the_chat_goes_on(tmp_path, llm, gateways,
                                                                                           failure):
    # (A 500 or a 429 puts the summary off to the next turn instead: see tests/agent/test_compaction.py.)
    server = await llm()
    turns = iter(range(1, 100))
    server.respond_with(lambda body: None if summarising(body) else {"text": f"answer {next(turns)}"})
    if failure == "malformed":
        server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": []})
    else:
        server.push_hang()
    chat = RecordingAdapter()
    # Compacts at ~2,000 tokens. The hung summary waits out the timeout; every other request must come in well
    # under it on a loaded 2-core machine (at 0.5 s, a CI run once saw a turn's answer time out too).
    model = openai_model(server, context_window=4_000, timeout_seconds=2.0)
    gateway = await gateways(make_config(tmp_path, model=model), [chat])
    replies = [await ask(chat, gateway, f"topic {n}: " + "words " * 200) for n in range(1, 11)]
    asked = next(i for i, body in enumerate(server.requests) if summarising(body))  # the first: it fails
    compacted = sum(not summarising(body) for body in server.requests[:asked]) + 1  # the turn that compacted
    assert replies[compacted - 1] == f"answer {compacted}\n\n{SUMMARY_FAILED}"
    assert replies[:compacted - 1] == [f"answer {n}" for n in range(1, compacted)]
    assert replies[compacted:] == [f"answer {n}" for n in range(compacted + 1, 11)]  # later summaries are written
    assert server.requests[asked + 1]["messages"][1]["content"].startswith(SUMMARY_HEADER + "\n- user: topic 1: ")
