"""NaN, Infinity and -Infinity in tool-call arguments: Python's json reads them (and makes infinity of a
number too large for a float), JSON has none of them. Kept, the call went back to the server in every
later request of the conversation as arguments that are no JSON, and the tool got values no JSON (a
note, a child's metadata, a workflow's input) can hold."""

from __future__ import annotations

import contextlib
import json
import math

import pytest

from agent import AgentSession, ToolRegistry
from agent._tool_calls import _parse_arguments
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer


def strict_json(text: str):
    """``text`` parsed as JSON is written (RFC 8259): no NaN or Infinity."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse,
                      parse_float=lambda s: v if math.isfinite(v := float(s)) else refuse(s))


@contextlib.asynccontextmanager
async def served_model(server: FakeOpenAIServer):
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0, timeout_seconds=10), env={})
    try:
        yield model
    finally:
        await model.aclose()


def sent_arguments(request: dict) -> list[str]:
    return [c["function"]["arguments"] for m in request["messages"] for c in m.get("tool_calls") or ()]


@pytest.mark.parametrize(("arguments", "why"), [
    ('{"ratio": NaN}', "NaN is not allowed in JSON"),
    ('{"limit": Infinity}', "Infinity is not allowed in JSON"),
    ('{"nested": {"low": [-Infinity]}}', "-Infinity is not allowed in JSON"),
    ('{"big": 1e999}', "1e999 is out of range for a number"),
    (json.dumps('{"ratio": NaN}'), "NaN is not allowed in JSON"),
], ids=["nan", "infinity", "nested-minus-infinity", "too-large", "double-encoded"])  # fmt: skip
async def test_arguments_holding_what_json_has_not_run_no_tool_and_are_not_kept(arguments, why):
    ran = []
    reg = ToolRegistry()
    reg.add("measure", "measure", {"type": "object"}, lambda a, c: ran.append(a) or "measured", toolset="test")
    async with FakeOpenAIServer() as server, served_model(server) as model:
        server.push_tool_calls([{"id": "c1", "name": "measure", "arguments": arguments}])
        server.push_text("fixed it")
        server.push_text("next turn")
        session = AgentSession(model=model, tools=reg.resolve())
        result = await session.run_turn("go")
        following = await session.run_turn("and now?")
    assert (result.text, following.text, ran) == ("fixed it", "next turn", [])
    [told] = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert told == f"Error: tool arguments are not valid JSON ({why}); send a JSON object"
    assert sent_arguments(server.requests[1]) == sent_arguments(server.requests[2]) == ["{}"]
    for message in session.messages:  # what a transcript store keeps
        for call in message.get("tool_calls") or ():
            assert strict_json(call["function"]["arguments"]) == {}
    json.dumps(session.messages, allow_nan=False)


def test_finite_numbers_are_read_as_before():
    assert _parse_arguments('{"a": 1.5e3, "b": -0.25, "c": 10, "d": 1e308}') == (
        {"a": 1500.0, "b": -0.25, "c": 10, "d": 1e308}, None)


@pytest.mark.parametrize("arguments", [
    '{"ratio": NaN}', '{"limit": -Infinity}', {"ratio": float("nan")}, {"limit": [float("inf")]},
], ids=["nan-text", "infinity-text", "nan-object", "infinity-object"])  # fmt: skip
async def test_a_stored_call_holding_nan_or_infinity_is_sent_as_an_empty_object(arguments):
    # Stored by a version that kept them (as text, or a store that kept the object itself).
    transcript = [
        {"role": "user", "content": "measure it"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "measure", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "measured"},
        {"role": "assistant", "content": "Done."},
    ]
    async with FakeOpenAIServer() as server, served_model(server) as model:
        server.push_text("still here")
        session = AgentSession(model=model)
        session.messages = transcript
        result = await session.run_turn("and now?")
    assert (result.exit_reason, result.text) == ("completed", "still here")
    assert sent_arguments(server.requests[0]) == ["{}"]
    assert session.messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    json.dumps(session.messages, allow_nan=False)
