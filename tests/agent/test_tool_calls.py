"""Tool-call arguments as the model sent them: what the loop runs, and what it tells the model instead."""

import json

import pytest

from agent import AgentSession, ToolRegistry
from agent._tool_calls import CUT_OFF, MAX_NESTING, _parse_arguments
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer


def _nested(depth: int) -> str:
    """An object nesting ``depth`` levels of objects and arrays in all (itself the first)."""
    inner = depth - 1
    return '{"x": ' + "[" * inner + "1" + "]" * inner + "}"


def test_arguments_nested_as_deep_as_allowed_are_parsed():
    args, problem = _parse_arguments(_nested(MAX_NESTING))
    assert (args, problem) == (json.loads(_nested(MAX_NESTING)), None)


def test_arguments_nested_deeper_are_refused_saying_why():
    assert _parse_arguments(_nested(MAX_NESTING + 1)) == (
        {}, f"tool arguments are nested more than {MAX_NESTING} levels deep; send flatter arguments")


# json parses these (its own limit is about 1000 levels, one stack frame each); walking what it
# parsed took two frames a level, so a RecursionError escaped the loop and ended the turn.
@pytest.mark.parametrize("arguments", [
    '{"x": ' + '{"y": ' * 600 + "1" + "}" * 600 + "}",
    '{"x": ' + "[" * 600 + "]" * 600 + "}",
    json.dumps('{"x": ' + "[" * 600 + "]" * 600 + "}"),
], ids=["objects", "arrays", "double-encoded"])  # fmt: skip
async def test_arguments_json_parses_but_nested_past_what_python_walks_are_told_to_the_model(arguments):
    ran = []
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: ran.append(a) or "ran", toolset="test")
    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"id": "c1", "name": "echo", "arguments": arguments}])
        server.push_text("recovered")
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=0, timeout_seconds=10), env={})
        try:
            result = await AgentSession(model=model, tools=reg.resolve()).run_turn("go")
        finally:
            await model.aclose()
        (answered,) = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert (result.exit_reason, result.text, ran) == ("completed", "recovered", [])
    assert answered["content"] == (f"Error: tool arguments are nested more than {MAX_NESTING} levels deep; "
                                   "send flatter arguments")


def _sent_arguments(request: dict) -> list[str]:
    """The arguments of every tool call in the conversation ``request`` sent."""
    return [c["function"]["arguments"] for m in request["messages"] for c in m.get("tool_calls") or ()]


# Servers that read back the conversation's tool calls (vLLM parses them for its chat templates)
# refused every later request of one holding arguments that are not a JSON object: one bad call
# broke the chat for good. What the tool is told stays as it was.
@pytest.mark.parametrize(("arguments", "kept", "told"), [
    ('{"x": "unterminated', "{}", "Error: tool arguments are not valid JSON"),
    ("", "{}", "ran"),
    ("[1, 2]", "{}", "Error: tool arguments must be a JSON object, got list"),
    (_nested(MAX_NESTING + 1), "{}", "Error: tool arguments are nested more than"),
    (json.dumps('{"x": "y"}'), '{"x": "y"}', "ran"),
    ('{ "x" :  "as written" }', '{ "x" :  "as written" }', "ran"),
], ids=["invalid", "empty", "not-an-object", "too-deep", "double-encoded", "an-object"])  # fmt: skip
async def test_the_conversation_keeps_a_calls_arguments_as_a_json_object(arguments, kept, told):
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: "ran", toolset="test")
    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"id": "c1", "name": "echo", "arguments": arguments}])
        server.push_text("recovered")
        server.push_text("next turn")
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=0, timeout_seconds=10), env={})
        try:
            session = AgentSession(model=model, tools=reg.resolve())
            result = await session.run_turn("go")
            following = await session.run_turn("and now?")
        finally:
            await model.aclose()
    assert (result.text, following.text) == ("recovered", "next turn")
    assert _sent_arguments(server.requests[1]) == _sent_arguments(server.requests[2]) == [kept]
    assert isinstance(json.loads(kept), dict)
    [answered] = [m for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert answered["content"].startswith(told)
    [call] = [m for m in session.messages if m.get("tool_calls")][0]["tool_calls"]
    assert call["function"]["arguments"] == kept
    assert result.tool_trace[0].input_bytes == len(arguments.encode())  # the trace counts what the model sent


async def test_a_call_cut_off_at_the_output_limit_is_kept_with_no_arguments():
    reg = ToolRegistry()
    reg.add("write", "write", {"type": "object"}, lambda a, c: "written", toolset="test")
    cut = '{"path": "big.txt", "content": "' + "line\\n" * 2_000
    async with FakeOpenAIServer() as server:
        server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{
            "index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write", "arguments": cut}}]}}]})
        server.push_text("I will write it in parts")
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                          max_retries=0, timeout_seconds=10), env={})
        try:
            result = await AgentSession(model=model, tools=reg.resolve()).run_turn("write it")
        finally:
            await model.aclose()
    assert result.text == "I will write it in parts"
    assert _sent_arguments(server.requests[1]) == ["{}"]
    [answered] = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert answered["content"] == f"Error: {CUT_OFF}"
