"""Conversations this code did not write: a transcript an older version stored, or a saved turn, may
hold a tool call whose arguments are not a JSON object, or a call no result answers. OpenAI-compatible
servers refuse every request of such a conversation (vLLM parses the calls' arguments for its chat
templates; OpenAI pairs every call with a result), so the chat was stuck for good."""

from __future__ import annotations

import contextlib
import json

import pytest

from agent import AgentSession
from agent._tool_calls import NOT_RUN, _mend_history
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer


@contextlib.asynccontextmanager
async def served_model(server: FakeOpenAIServer):
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0, timeout_seconds=10), env={})
    try:
        yield model
    finally:
        await model.aclose()


def old_transcript(arguments) -> list[dict]:
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "remember this"},
        {"role": "assistant", "content": "Saving it.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "memory", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: tool arguments are not valid JSON"},
        {"role": "assistant", "content": "Sorry, let me try that again."},
    ]


def sent_arguments(request: dict) -> list:
    return [c["function"]["arguments"] for m in request["messages"] for c in m.get("tool_calls") or ()]


@pytest.mark.parametrize(("arguments", "sent"), [
    ('{"action": "add", "text": "cut sh', "{}"),
    ("[1, 2]", "{}"),
    ('"just text"', "{}"),
    ("", "{}"),
    (None, "{}"),
    (json.dumps('{"text": "double"}'), '{"text": "double"}'),
    ({"text": "an object"}, '{"text": "an object"}'),
    ('{ "text" :  "as written" }', '{ "text" :  "as written" }'),
], ids=["invalid", "a-list", "a-string", "empty", "none", "double-encoded", "an-object", "kept"])  # fmt: skip
async def test_a_stored_call_whose_arguments_are_not_a_json_object_is_sent_as_one(arguments, sent):
    async with FakeOpenAIServer() as server, served_model(server) as model:
        server.push_text("still here")
        server.push_text("and again")
        session = AgentSession(model=model, system_prompt="be brief")
        session.messages = old_transcript(arguments)
        first = await session.run_turn("and now?")
        second = await session.run_turn("once more?")
    assert (first.exit_reason, first.text, second.text) == ("completed", "still here", "and again")
    assert sent_arguments(server.requests[0]) == sent_arguments(server.requests[1]) == [sent]
    assert isinstance(json.loads(sent), dict)
    # Only the arguments change: the texts around them, the call's id and name go as they were.
    mended = old_transcript(sent)
    assert server.requests[0]["messages"][:5] == mended
    assert session.messages[:5] == mended


async def test_a_mended_transcript_is_stored_again_and_other_text_kept():
    messages = old_transcript('{"oops')
    original = messages[2]
    version_before = 3
    session = AgentSession(model=_NeverCalled())
    session.history_version = version_before
    session.messages = messages
    session._mend_loaded()
    assert session.messages is messages  # mended in place: a saver's list is still the session's
    assert messages[2] is not original and original["tool_calls"][0]["function"]["arguments"] == '{"oops'
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert session.history_version == version_before + 1  # a saver stores it all again, mended


async def test_a_stored_call_never_answered_is_answered_as_not_run():
    # Versions before calls were answered when a turn ended by an exception stored them so.
    transcript = [
        {"role": "user", "content": "look both up"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"q": "a"}'}},
            {"id": "b", "type": "function", "function": {"name": "search", "arguments": '{"q": "b"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "found a"},
        {"role": "user", "content": "hello?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "search", "arguments": '{"q": "c"}'}}]},
    ]
    async with FakeOpenAIServer() as server, served_model(server) as model:
        server.push_text("here now")
        session = AgentSession(model=model)
        session.messages = transcript
        result = await session.run_turn("are you there?")
    # FakeOpenAIServer refuses, as OpenAI does, a request with a call no result answers right after it.
    assert (result.exit_reason, result.text) == ("completed", "here now")
    assert [(m.get("tool_call_id"), m["content"]) for m in server.requests[0]["messages"] if m["role"] == "tool"] == [
        ("a", "found a"), ("b", NOT_RUN), ("c", NOT_RUN)]
    assert [m["content"] for m in session.messages if m["role"] == "user"] == ["look both up", "hello?", "are you there?"]


async def test_a_saved_turn_holding_a_bad_call_resumes_mended():
    # A workflow that continued as new under an older version carries its conversation as it was.
    async with FakeOpenAIServer() as server, served_model(server) as model:
        server.push_text("resumed")
        session = AgentSession(model=model)
        saved = {
            "messages": old_transcript("not json") + [{"role": "user", "content": "go on"}], "history_version": 0,
            "turns_run": 1, "steer": [], "answered_api_calls": 1, "totals": [0, 0, 0.0, 1],
            "turn": {"turn_id": "turn-1", "started": 0.0, "api_calls": 0, "child_calls": 0, "usage": [0, 0],
                     "cost": None, "last_text": "", "model_name": None, "summary_failed": False, "iterations": 0,
                     "asked_again": False, "trace": []},
        }
        result = await session.resume_turn(json.loads(json.dumps(saved)))
    assert (result.exit_reason, result.text) == ("completed", "resumed")
    assert sent_arguments(server.requests[0]) == ["{}"]


def test_mending_leaves_what_it_cannot_read_and_a_sound_conversation_alone():
    sound = old_transcript('{"text": "fine"}')
    odd = [{"role": "assistant", "tool_calls": "not a list"}, {"role": "assistant", "tool_calls": [
        "not a call", {"id": "x", "function": "not a function"}, {"function": {"arguments": "[]"}}]}]
    kept = [dict(m) for m in sound], json.loads(json.dumps(odd))
    assert _mend_history(sound) == (0, 0) and _mend_history(odd) == (1, 1)
    assert sound == kept[0]
    assert odd[1]["tool_calls"][:2] == kept[1][1]["tool_calls"][:2]
    assert odd[1]["tool_calls"][2] == {"function": {"arguments": "{}"}}
    assert odd[2] == {"role": "tool", "tool_call_id": "x", "content": NOT_RUN}


class _NeverCalled:
    name = "never"
    context_window = 8192
    supports_vision = False

    async def complete(self, request):
        raise AssertionError("no model call expected")
