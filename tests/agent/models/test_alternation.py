"""Conversations a strict chat template refuses (two user messages in a row) are sent alternating:
the real SDK against FakeOpenAIServer(strict_alternation=True), which answers as vLLM with a
Mistral template does."""

from __future__ import annotations

import aiohttp
import pytest

from agent import AgentSession, CompactionPolicy, Compactor, HookRegistry, ToolRegistry
from agent._compaction import SUMMARY_HEADER
from agent._session import STEER_NOTE
from agent.models import OpenAIModel
from agent.models._alternation import NO_ANSWER, alternating
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

SYSTEM = {"role": "system", "content": "be brief"}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def calls(*ids):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": "echo", "arguments": "{}"}} for i in ids]}


def roles(messages):
    return [m["role"] for m in messages]


@pytest.fixture
async def strict():
    async with FakeOpenAIServer(strict_alternation=True) as server:
        models = []

        def model(**overrides):
            settings = {"provider": "openai", "name": "mistral", "base_url": server.base_url, "api_key": "sk-test",
                        "max_retries": 0, "timeout_seconds": 10, **overrides}
            models.append(OpenAIModel(ModelSettings(**settings), env={}))
            return models[-1]

        yield server, model
        for m in models:
            await m.aclose()


# -- what is sent -----------------------------------------------------------------------------


def test_adjacent_user_messages_are_joined_in_order_and_nothing_else_changes():
    summary = {"role": "user", "content": f"{SUMMARY_HEADER}\nthey talked"}
    answer = {"role": "assistant", "content": "ok"}
    messages = [SYSTEM, summary, {"role": "user", "content": "first"}, {"role": "user", "content": "second"}, answer]
    sent = alternating(messages)
    assert sent == [SYSTEM, {"role": "user", "content": f"{SUMMARY_HEADER}\nthey talked\n\nfirst\n\nsecond"}, answer]
    assert sent[0] is SYSTEM and sent[2] is answer
    assert roles(messages) == ["system", "user", "user", "user", "assistant"]  # the transcript is untouched


def test_content_part_lists_are_concatenated_in_order():
    parts = [{"type": "text", "text": "look"}, IMAGE]
    sent = alternating([{"role": "user", "content": "before"}, {"role": "user", "content": parts},
                        {"role": "user", "content": [IMAGE]}])
    assert sent == [{"role": "user", "content": [{"type": "text", "text": "before"}, *parts, IMAGE]}]


def test_tool_results_and_calls_pass_as_they_are_and_an_unanswered_turn_gets_no_answer_before_the_next():
    tool = {"role": "tool", "tool_call_id": "a", "content": "r"}
    done = [{"role": "user", "content": "go"}, calls("a"), tool, {"role": "assistant", "content": "done"},
            {"role": "user", "content": "next"}]
    assert alternating(done) == done
    ended = [{"role": "user", "content": "go"}, calls("a"), tool, {"role": "user", "content": "next"}]
    sent = alternating(ended)
    assert sent == [*ended[:3], {"role": "assistant", "content": NO_ANSWER}, ended[3]]
    assert sent[1] is ended[1] and sent[2] is tool


# -- through a session, against a server with a strict template ----------------------------------------


async def test_a_turn_after_one_that_failed_is_not_refused(strict):
    server, model = strict
    s = AgentSession(model=model(), system_prompt="be brief")
    server.push_error(500)
    assert (await s.run_turn("first")).exit_reason == "error"
    server.push_text("answered")
    result = await s.run_turn("second")
    assert (result.exit_reason, result.text) == ("completed", "answered")
    assert server.requests[-1]["messages"][1:] == [{"role": "user", "content": "first\n\nsecond"}]
    assert roles(s.messages) == ["system", "user", "user", "assistant"]


async def test_a_turn_after_one_that_failed_after_its_tools_ran_is_not_refused(strict):
    server, model = strict
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: "echoed", toolset="test")
    s = AgentSession(model=model(), tools=reg.resolve(), system_prompt="be brief")
    server.push_tool_calls([{"id": "c1", "name": "echo"}])
    server.push_error(500)
    assert (await s.run_turn("first")).exit_reason == "error"
    server.push_text("answered")
    assert (await s.run_turn("second")).text == "answered"
    assert roles(server.requests[-1]["messages"]) == ["system", "user", "assistant", "tool", "assistant", "user"]


async def test_a_turn_after_a_compaction_that_leaves_the_summary_before_a_user_message_is_not_refused(strict):
    server, model = strict
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * 400} for i in range(10)]
    s = AgentSession(model=model(context_window=2_000), system_prompt="be brief",
                     compactor=Compactor(CompactionPolicy(keep_recent_messages=5)))
    s.messages.extend(chat)
    server.push_text("they talked")  # the summary
    server.push_text("answered")
    result = await s.run_turn("next")
    assert (result.exit_reason, result.text) == ("completed", "answered")
    assert s.messages[1]["content"].startswith(SUMMARY_HEADER) and roles(s.messages[1:3]) == ["user", "user"]
    sent = server.requests[-1]["messages"]
    assert sent[1]["content"] == f"{SUMMARY_HEADER}\nthey talked\n\n{chat[6]['content']}"
    assert roles(sent) == ["system", "user", "assistant", "user", "assistant", "user"]


async def test_a_steer_note_after_the_message_it_steers_is_not_refused(strict):
    server, model = strict
    hooks = HookRegistry()
    s = AgentSession(model=model(), system_prompt="be brief", hooks=hooks)
    hooks.register("turn_start", lambda **event: s.steer("in French, please"))  # before the first model call
    server.push_text("bonjour")
    result = await s.run_turn("hello")
    assert (result.exit_reason, result.text) == ("completed", "bonjour")
    assert server.requests[-1]["messages"][1] == {"role": "user", "content": f"hello\n\n{STEER_NOTE}\nin French, please"}


async def test_the_strict_server_refuses_as_vllm_with_mistrals_template_does(strict):
    server, _ = strict
    tool = {"role": "tool", "tool_call_id": "a", "content": "r"}
    alternate = "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."
    cases = [
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], alternate),
        ([{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}], alternate),
        ([{"role": "user", "content": "go"}, calls("a"), tool, {"role": "user", "content": "b"}], alternate),
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}],
         "Only user and assistant roles are supported, with the exception of an initial optional system message!"),
    ]
    async with aiohttp.ClientSession() as http:
        for messages, text in cases:
            async with http.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": messages}) as r:
                assert (r.status, await r.json()) == (400, {"error": {
                    "message": text, "type": "BadRequestError", "param": None, "code": 400}})
        ok = [SYSTEM, {"role": "user", "content": "go"}, calls("a"), tool, {"role": "assistant", "content": "x"}]
        async with http.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": ok}) as r:
            assert r.status == 200
