"""One model answer whose tool calls share an id (some OpenAI-compatible servers number each answer's calls
alike, or give them all one): each call gets an id of its own, in the assistant message and in its result."""

import pytest

from agent import AgentSession, ToolRegistry, TurnObserver
from agent._model import ToolCall
from agent._tool_calls import NOT_RUN, _unique_ids
from agent.models import OpenAIModel
from agent.models.scripted import ScriptedModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer


def echo_tools(seen_ids):
    tools = ToolRegistry()
    tools.add("echo", "echo", {"type": "object"}, lambda a, c: seen_ids.append(c.call_id) or f"said {a['n']}",
              toolset="test")
    return tools.resolve()


def twins(n=2, call_id="call_1"):
    return {"tool_calls": [{"id": call_id, "name": "echo", "arguments": {"n": i}} for i in range(n)]}


def pairs(messages):
    """(call id, result id, result) of each call, matched by position."""
    caller = next(m for m in messages if m.get("tool_calls"))
    results = [m for m in messages if m["role"] == "tool"]
    assert len(results) == len(caller["tool_calls"])
    return [(c["id"], r["tool_call_id"], r["content"]) for c, r in zip(caller["tool_calls"], results, strict=True)]


async def test_calls_sharing_an_id_each_get_their_own_in_the_call_and_its_result():
    seen = []
    model = ScriptedModel({"parent": lambda r: twins(3) if r.iteration == 0 else {"text": "done"}})
    s = AgentSession(model=model, tools=echo_tools(seen))
    result = await s.run_turn("go")
    assert result.exit_reason == "completed"
    assert pairs(s.messages) == [("call_1", "call_1", "said 0"), ("call_1_2", "call_1_2", "said 1"),
                                 ("call_1_3", "call_1_3", "said 2")]
    assert seen == ["call_1", "call_1_2", "call_1_3"]  # the tool's ToolContext.call_id, and the hooks'


async def test_a_turn_ended_midway_answers_the_twin_it_did_not_run():
    class Failing(TurnObserver):
        started = 0

        async def on_tool_start(self, name, args):
            self.started += 1
            if self.started == 2:
                raise RuntimeError("host broke")

    model = ScriptedModel({"parent": lambda r: twins() if r.iteration == 0 else {"text": "done"}})
    s = AgentSession(model=model, tools=echo_tools([]))
    with pytest.raises(RuntimeError):
        await s.run_turn("go", observer=Failing())
    # Before, the second call_1 counted as answered by the first's result and stayed unanswered.
    assert pairs(s.messages) == [("call_1", "call_1", "said 0"), ("call_1_2", "call_1_2", NOT_RUN)]


def test_unique_ids_keep_a_mistral_shaped_id_mistral_shaped_and_leave_unique_ids_alone():
    calls = tuple(ToolCall(i, "f", "{}") for i in ("aB3dE6gH9", "aB3dE6gH9", "aB3dE6gH2", "x"))
    assert [c.id for c in _unique_ids(calls)] == ["aB3dE6gH9", "aB3dE6gH3", "aB3dE6gH2", "x"]
    unique = tuple(ToolCall(i, "f", "{}") for i in ("a", "b"))
    assert _unique_ids(unique) is unique


async def test_through_the_sdk_each_result_answers_one_call():
    async with FakeOpenAIServer() as server:
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, max_retries=0), env={})
        try:
            server.push_tool_calls([{"id": "call_1", "name": "echo", "arguments": '{"n": 0}'},
                                    {"id": "call_1", "name": "echo", "arguments": '{"n": 1}'}])
            server.push_text("done")
            s = AgentSession(model=model, tools=echo_tools([]))
            result = await s.run_turn("go")
            assert (result.exit_reason, result.text) == ("completed", "done")
            sent = server.requests[1]["messages"]
            caller = next(m for m in sent if m.get("tool_calls"))
            assert [c["id"] for c in caller["tool_calls"]] == ["call_1", "call_1_2"]
            assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
                ("call_1", "said 0"), ("call_1_2", "said 1")]
        finally:
            await model.aclose()
