"""Steered text the model never answered after: the turn ran out of iterations right after the tool result
that carries it, or the model call after it failed. It is unread again (`AgentSession.take_steer`) and out
of the conversation, so that its host runs it as a turn of its own instead of settling it, unanswered, with
the turn that swallowed it."""

from __future__ import annotations

import asyncio

from agent import AgentSession, ToolRegistry
from agent._session import STEER_NOTE
from agent.models.scripted import ScriptedModel


def waiting_tool():
    """A ``wait_tool`` that runs until the test sets the returned gate; ``entered`` is set once it runs."""
    entered, gate = asyncio.Event(), asyncio.Event()

    async def wait_tool(args, ctx):
        entered.set()
        await gate.wait()
        return "tool output"

    reg = ToolRegistry()
    reg.add("wait_tool", "waits", {"type": "object"}, wait_tool, toolset="test")
    return reg.resolve(), entered, gate


async def steered_while_the_tool_runs(script, **kw):
    """Run a turn of ``script``, steering ``use metric units`` while its tool runs; (session, result)."""
    tools, entered, gate = waiting_tool()
    session = AgentSession(model=ScriptedModel({"parent": script}), tools=tools, **kw)
    task = asyncio.create_task(session.run_turn("go"))
    await entered.wait()
    session.steer("use metric units")
    gate.set()
    return session, await task


def no_steer_in(session):
    return not any(STEER_NOTE in str(m.get("content")) for m in session.messages)


async def test_a_steer_read_with_the_last_tool_result_before_max_iterations_is_unread_again():
    session, result = await steered_while_the_tool_runs(
        [[{"tool_calls": [{"name": "wait_tool", "arguments": {}}]}, {"text": "never asked"}]], max_iterations=1)
    assert result.exit_reason == "max_iterations"
    assert session.unread_steers == 1
    assert session.take_steer() == ["use metric units"]
    assert no_steer_in(session)
    assert session.messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "tool output"}


async def test_a_steer_read_with_a_tool_result_before_a_failed_model_call_is_unread_again():
    session, result = await steered_while_the_tool_runs(
        [[{"tool_calls": [{"name": "wait_tool", "arguments": {}}]}, {"error": "server_error", "message": "502"}]])
    assert result.exit_reason == "error"
    session.steer("and later")  # steered after: read after it
    assert session.take_steer() == ["use metric units", "and later"]
    assert no_steer_in(session)


async def test_a_steer_note_before_a_failed_model_call_is_unread_again():
    session = AgentSession(model=ScriptedModel({"parent": [[{"error": "server_error", "message": "502"}]]}))
    session.steer("use metric units")
    result = await session.run_turn("go")
    assert result.exit_reason == "error"
    assert session.take_steer() == ["use metric units"]
    assert session.messages == [{"role": "user", "content": "go"}]


async def test_a_steer_the_model_answered_after_stays_read():
    session, result = await steered_while_the_tool_runs(
        [[{"tool_calls": [{"name": "wait_tool", "arguments": {}}]},
          {"tool_calls": [{"name": "wait_tool", "arguments": {}}]}]], max_iterations=2)
    assert result.exit_reason == "max_iterations"  # the second answer read it; the second tool ran
    assert session.unread_steers == 0
    assert sum(STEER_NOTE in str(m.get("content")) for m in session.messages) == 1
