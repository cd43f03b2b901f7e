"""``send_message`` and ``send_file`` send a bounded number a turn: a model that calls one in every
answer, in a loop, fills the chat with no more than that; the next turn may send as many again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import AgentSession, ToolRegistry
from agent._errors import ToolError
from agent._tools import ToolContext
from agent.models.scripted import ScriptedModel
from agent.tools import messaging_toolset, send_file_toolset
from agent.tools.messaging import MAX_MESSAGES_PER_TURN
from agent.tools.messaging import TOO_MANY as TOO_MANY_MESSAGES
from agent.tools.send_file import MAX_FILES_PER_TURN
from agent.tools.send_file import TOO_MANY as TOO_MANY_FILES


def _looping(call: dict, answers: int) -> ScriptedModel:
    """A model that makes ``call`` in each of its first ``answers`` answers, then says it is done."""
    return ScriptedModel({"parent": lambda r: {"tool_calls": [call]} if r.iteration < answers else {"text": "done"}})


def _session(tools, model, workspace: Path, services) -> AgentSession:
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    return AgentSession(model=model, tools=registry.resolve(), workspace=workspace, services=services)


def _results(session: AgentSession) -> list[str]:
    return [m["content"] for m in session.messages if m["role"] == "tool"]


async def test_a_looping_turn_sends_a_bounded_number_of_messages_and_the_next_turn_as_many(tmp_path: Path):
    sent = []

    async def send_message(text, target):
        sent.append(text)

    answers = MAX_MESSAGES_PER_TURN + 5
    model = _looping({"name": "send_message", "arguments": {"text": "still here"}}, answers)
    session = _session(messaging_toolset(), model, tmp_path, {"send_message": send_message})
    result = await session.run_turn("work")
    assert (result.exit_reason, len(sent)) == ("completed", MAX_MESSAGES_PER_TURN)
    results = _results(session)
    assert results[:MAX_MESSAGES_PER_TURN] == ["Message sent."] * MAX_MESSAGES_PER_TURN
    assert results[MAX_MESSAGES_PER_TURN:] == [f"Error: {TOO_MANY_MESSAGES}"] * 5
    await session.run_turn("again")
    assert len(sent) == 2 * MAX_MESSAGES_PER_TURN


async def test_a_message_the_host_refused_is_not_counted(tmp_path: Path):
    sent = []

    async def send_message(text, target):
        if not text.strip():
            raise ToolError("The message is empty: nothing was sent.")
        sent.append(text)

    calls = [{"name": "send_message", "arguments": {"text": " "}}] * 5 + \
            [{"name": "send_message", "arguments": {"text": "hi"}}] * MAX_MESSAGES_PER_TURN
    model = ScriptedModel({"parent": lambda r: {"tool_calls": [calls[r.iteration]]} if r.iteration < len(calls)
                           else {"text": "done"}})
    session = _session(messaging_toolset(), model, tmp_path, {"send_message": send_message})
    await session.run_turn("work")
    assert len(sent) == MAX_MESSAGES_PER_TURN


async def test_a_looping_turn_sends_a_bounded_number_of_files(tmp_path: Path):
    (tmp_path / "report.csv").write_text("a,b\n")
    sent = []

    async def send_file(file):
        sent.append(file.shown)
        return "queued"

    model = _looping({"name": "send_file", "arguments": {"path": "report.csv"}}, MAX_FILES_PER_TURN + 3)
    session = _session(send_file_toolset(), model, tmp_path, {"send_file": send_file})
    result = await session.run_turn("send it")
    assert (result.exit_reason, len(sent)) == ("completed", MAX_FILES_PER_TURN)
    assert _results(session)[MAX_FILES_PER_TURN:] == [f"Error: {TOO_MANY_FILES}"] * 3


async def test_a_host_without_a_session_object_is_bounded_by_turn_id(tmp_path: Path):
    (send,) = messaging_toolset()
    sent = []

    async def send_message(text, target):
        sent.append(text)

    for session, turn in (("a plain value", "t1"), (None, "t2")):
        ctx = ToolContext(session=session, call_id="c", workspace=tmp_path, services={"send_message": send_message},
                          turn_id=turn)
        for _ in range(MAX_MESSAGES_PER_TURN):
            assert await send.invoke({"text": "hi"}, ctx) == "Message sent."
        with pytest.raises(ToolError, match="the most one turn may send"):
            await send.invoke({"text": "hi"}, ctx)
    assert len(sent) == 2 * MAX_MESSAGES_PER_TURN
