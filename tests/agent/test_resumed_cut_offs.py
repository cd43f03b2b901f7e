"""A turn saved at a model call (a Temporal workflow that continues as new) and resumed elsewhere keeps
counting the answers in a row whose tool calls were cut off at the output-length limit: each is a full
paid answer, and a count that restarted at 0 let a turn pay for more of them than the limit."""

from __future__ import annotations

import json

import pytest

from agent import AgentSession, ToolRegistry
from agent._session import CUT_OFF_CALLS_ENDING_A_TURN
from agent.models.scripted import ScriptedModel


class _Saved(BaseException):
    """Leaves the turn where a workflow continues as new: inside the model call, after taking the turn."""


class _SavingModel:
    """Answers as ``model`` does, but at call ``at`` saves the running turn (as JSON would carry it) and leaves."""

    def __init__(self, model: ScriptedModel, at: int) -> None:
        self.model, self.at, self.calls, self.saved, self.session = model, at, 0, None, None
        self.name, self.context_window = model.name, model.context_window

    async def complete(self, request):
        self.calls += 1
        if self.calls == self.at:
            self.saved = json.loads(json.dumps(self.session.saved_turn()))
            raise _Saved
        return await self.model.complete(request)


def always_cut_off(request):
    """Every answer a tool call whose arguments the output-length limit cut short."""
    return {"text": f"writing part {request.iteration}", "truncated": True,
            "tool_calls": [{"name": "write", "arguments": '{"content": "a very long fi'}]}


def tools():
    reg = ToolRegistry()
    reg.add("write", "write", {"type": "object"}, lambda a, c: "written", toolset="test")
    return reg.resolve()


async def test_a_turn_resumed_after_a_cut_off_answer_ends_at_the_next_one():
    assert CUT_OFF_CALLS_ENDING_A_TURN == 2  # the figures below
    saving = _SavingModel(ScriptedModel({"parent": always_cut_off}), at=2)
    first = AgentSession(model=saving, tools=tools())
    saving.session = first
    with pytest.raises(_Saved):
        await first.run_turn("write the file", turn_id="t-1")
    second = AgentSession(model=ScriptedModel({"parent": always_cut_off}), tools=tools())
    resumed = await second.resume_turn(saving.saved)
    # One answer cut off before the save, one after: two in a row end the turn, as in one session.
    assert (resumed.exit_reason, resumed.truncated, resumed.api_calls) == ("completed", True, 2)
    assert resumed.text == "writing part 1"
    assert len(second.model.requests) == 1
    assert saving.saved["turn"]["cut_offs"] == 1


async def test_a_turn_saved_by_an_older_version_resumes_counting_from_none():
    saving = _SavingModel(ScriptedModel({"parent": always_cut_off}), at=2)
    first = AgentSession(model=saving, tools=tools())
    saving.session = first
    with pytest.raises(_Saved):
        await first.run_turn("write the file")
    del saving.saved["turn"]["cut_offs"]  # older versions did not save the count
    second = AgentSession(model=ScriptedModel({"parent": always_cut_off}), tools=tools())
    resumed = await second.resume_turn(saving.saved)
    assert (resumed.exit_reason, resumed.truncated, resumed.api_calls) == ("completed", True, 3)
