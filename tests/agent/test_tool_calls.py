"""Tool-call arguments as the model sent them: what the loop runs, and what it tells the model instead."""

import json

import pytest

from agent import AgentSession, ToolRegistry
from agent._tool_calls import MAX_NESTING, _parse_arguments
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
