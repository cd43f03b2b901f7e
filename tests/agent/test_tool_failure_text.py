"""A tool whose exception cannot be shown as text: the turn goes on, the model reads its type."""

from __future__ import annotations

import pytest

from agent import AgentSession, ToolError, ToolRegistry, tool_failure_text
from agent._tools import exception_text
from agent.models.scripted import ScriptedModel

OBJ = {"type": "object", "properties": {}}


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


class NotAString(Exception):
    def __str__(self):
        return 42


class Huge(Exception):
    def __str__(self):
        return "y" * 2_000_000


class UnprintableToolError(ToolError):
    def __str__(self):
        raise ValueError("nor for you")


def _raising(kind):
    def handler(args, ctx):
        raise kind()
    return handler


async def _async_raising(args, ctx):
    raise Unprintable()


@pytest.mark.parametrize(("handler", "expected"), [
    (_raising(Unprintable), "Error: boom failed: Unprintable: (its text could not be shown: RuntimeError)"),
    (_async_raising, "Error: boom failed: Unprintable: (its text could not be shown: RuntimeError)"),
    (_raising(NotAString), "Error: boom failed: NotAString: (its text could not be shown: TypeError)"),
    (_raising(UnprintableToolError),
     "Error: boom failed: UnprintableToolError: (its text could not be shown: ValueError)"),
])
async def test_an_exception_whose_text_fails_is_told_by_its_type(handler, expected):
    # str(exc) raised inside the session's handler of tool errors: the turn ended with the tool's bug.
    reg = ToolRegistry()
    reg.add("boom", "boom", OBJ, handler, toolset="test")
    s = AgentSession(model=ScriptedModel({"parent": [[{"tool_calls": [{"name": "boom", "arguments": {}}]},
                                                      {"text": "recovered"}]]}), tools=reg.resolve())
    result = await s.run_turn("go")
    assert (result.exit_reason, result.text) == ("completed", "recovered")
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == [expected]
    assert [e.ok for e in result.tool_trace] == [False]


def test_what_the_model_reads_is_bounded_and_a_tool_errors_own_words():
    # What the Temporal worker's tool activity sends back, as the session writes it.
    assert tool_failure_text("boom", ToolError("no such file: a.txt")) == "no such file: a.txt"
    text = tool_failure_text("boom", Huge())
    assert text.startswith("boom failed: Huge: yyy") and len(text) < 1_000
    assert tool_failure_text("boom", UnprintableToolError()) == (
        "boom failed: UnprintableToolError: (its text could not be shown: ValueError)")


def test_exception_text_never_raises():
    assert exception_text(Unprintable()) == "Unprintable: (its text could not be shown: RuntimeError)"
    assert exception_text(ValueError("bad")) == "ValueError: bad"
