"""``AgentSession(redact=...)`` masks what the model reads of a tool's failure (its `ToolError`, any other
exception, a stray cancellation), and what the ``tool_end`` hook is told of it; a successful result is the
tool's data and is passed as it is."""

from __future__ import annotations

import asyncio

import pytest

from agent import AgentSession, HookRegistry, ToolError, ToolRegistry
from agent.models.scripted import ScriptedModel

OBJ = {"type": "object", "properties": {}}
SECRET = "s3cr3t-value"


def mask(text: str) -> str:
    return text.replace(SECRET, "***")


def _raising(exc):
    async def handler(args, ctx):
        raise exc
    return handler


async def _returning(args, ctx):
    return f"the config says {SECRET}"


@pytest.mark.parametrize(("handler", "expected"), [
    (_raising(ToolError(f"upload refused for {SECRET}")), "Error: upload refused for ***"),
    (_raising(RuntimeError(f"401 for /bot{SECRET}/send")), "Error: tool failed: RuntimeError: 401 for /bot***/send"),
    (_raising(asyncio.CancelledError(f"gave up on {SECRET}")),
     "Error: tool failed: CancelledError: gave up on ***"),
    (_returning, f"the config says {SECRET}"),
])
async def test_a_tools_failure_is_masked_and_its_result_is_not(handler, expected):
    reg = ToolRegistry()
    reg.add("tool", "a tool", OBJ, handler, toolset="test")
    ended = []
    hooks = HookRegistry()
    hooks.register("tool_end", lambda **event: ended.append(event["output"]))
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "tool"}]}, {"text": "done"}]]})
    s = AgentSession(model=model, tools=reg.resolve(), hooks=hooks, redact=mask)
    result = await s.run_turn("go")
    assert result.text == "done"
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == [expected] == ended


async def test_without_a_redactor_a_failure_reads_as_it_was():
    reg = ToolRegistry()
    reg.add("tool", "a tool", OBJ, _raising(RuntimeError(SECRET)), toolset="test")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "tool"}]}, {"text": "done"}]]})
    s = AgentSession(model=model, tools=reg.resolve())
    await s.run_turn("go")
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == [f"Error: tool failed: RuntimeError: {SECRET}"]


async def test_a_redactor_that_raises_hides_the_failure_and_the_turn_goes_on(caplog):
    # A host's redactor with a bug ended the turn with its error, the chat answered with nothing.
    def broken(text: str) -> str:
        raise ValueError(f"cannot mask {text}")

    reg = ToolRegistry()
    reg.add("tool", "a tool", OBJ, _raising(ToolError(f"upload refused for {SECRET}")), toolset="test")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "tool"}]}, {"text": "done"}]]})
    s = AgentSession(model=model, tools=reg.resolve(), redact=broken)
    result = await s.run_turn("go")
    assert result.text == "done"
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == [
        "Error: tool failed; what went wrong is not shown (it could not be masked)"]
    assert "masking the failure of tool tool raised ValueError" in caplog.text
    assert SECRET not in caplog.text
