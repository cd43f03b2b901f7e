import asyncio
import json

import pytest

from agent import AgentSession, ModelError, ModelRequest, ToolRegistry
from agent.models.demo import DEMO_TAG, DemoModel, split_list
from agent.settings import DemoModelSettings

DELEGATE = {"type": "function", "function": {"name": "delegate_task", "parameters": {}}}
LIST_FILES = {"type": "function", "function": {"name": "list_files", "parameters": {}}}
FAST = DemoModelSettings(child_steps=2, step_seconds=0)


def user(text):
    return {"role": "user", "content": text}


def test_split_list_takes_all_three_bullet_styles():
    items, rest = split_list("Research these:\n- cats\n* dogs\n1. birds\nthanks")
    assert items == ["cats", "dogs", "birds"]
    assert rest == "Research these:\nthanks"


async def test_parent_delegates_one_task_per_item_without_commentary():
    model = DemoModel(FAST)
    resp = await model.complete(ModelRequest([user("Compare:\n- apples\n- pears")], tools=[DELEGATE]))
    assert resp.text is None
    (call,) = resp.tool_calls
    assert call.name == "delegate_task"
    assert json.loads(call.arguments) == {
        "tasks": [{"goal": "apples", "context": "Compare:"}, {"goal": "pears", "context": "Compare:"}]
    }


async def test_parent_without_delegate_tool_explains_itself():
    resp = await DemoModel(FAST).complete(ModelRequest([user("- a\n- b")]))
    assert resp.text.startswith(DEMO_TAG)
    assert "not available" in resp.text


async def test_other_messages_get_the_explanation():
    resp = await DemoModel(FAST).complete(ModelRequest([user("hello")], tools=[DELEGATE]))
    assert resp.text.startswith(DEMO_TAG) and "model.provider: openai" in resp.text


async def test_parent_answers_results_with_one_line_per_task_naming_it():
    call = {"id": "c1", "type": "function",
            "function": {"name": "delegate_task", "arguments": json.dumps({"tasks": [{"goal": "apples"}, {"goal": "pears"}]})}}
    results = {"results": [
        {"task_index": 0, "status": "completed", "summary": "red"},
        {"task_index": 1, "status": "failed", "error": "boom", "summary": None},
    ]}
    messages = [user("x"), {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": json.dumps(results)}]
    resp = await DemoModel(FAST).complete(ModelRequest(messages, tools=[DELEGATE]))
    lines = resp.text.splitlines()
    assert lines[1] == "- apples: completed — red"
    assert lines[2] == "- pears: failed — boom"


async def test_background_results_are_named_by_their_own_goals_not_the_latest_calls():
    # Two lists sent one after the other: the first one's results come back after the second was dispatched.
    def call(cid, *goals):
        tasks = [{"goal": g} for g in goals]
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "delegate_task", "arguments": json.dumps({"tasks": tasks})}}]}

    def dispatched(cid, *goals):
        return {"role": "tool", "tool_call_id": cid, "content": json.dumps({"status": "dispatched", "goals": goals})}

    first = {"delegation_id": "d1", "goals": ["apples", "pears", "plums"], "results": [
        {"task_index": i, "status": "completed", "summary": f"found {i}"} for i in range(3)]}
    messages = [user("- apples\n- pears\n- plums"), call("c1", "apples", "pears", "plums"), dispatched("c1", "a", "p", "p"),
                user("- cats"), call("c2", "cats"), dispatched("c2", "cats"),
                user("[Background delegation results] ...\n" + json.dumps(first))]
    resp = await DemoModel(FAST).complete(ModelRequest(messages, tools=[DELEGATE]))
    assert resp.text.splitlines()[1:] == ["- apples: completed — found 0", "- pears: completed — found 1",
                                          "- plums: completed — found 2"]
    # A /retry of two of them: the results keep their first task indexes, the goals are theirs in order.
    retried = {"delegation_id": "d1-r", "goals": ["pears", "plums"], "results": [
        {"task_index": i, "status": "completed", "summary": f"again {i}"} for i in (1, 2)]}
    resp = await DemoModel(FAST).complete(ModelRequest([*messages, user("[...]\n" + json.dumps(retried))]))
    assert resp.text.splitlines()[1:] == ["- pears: completed — again 1", "- plums: completed — again 2"]


async def test_parent_acknowledges_a_background_dispatch():
    payload = {"status": "dispatched", "delegation_id": "d1", "goals": ["a", "b"]}
    resp = await DemoModel(FAST).complete(ModelRequest([user("x"), {"role": "tool", "content": json.dumps(payload)}]))
    assert "Started 2 subagent(s)" in resp.text


async def test_child_takes_real_tool_steps_then_names_its_goal():
    reg = ToolRegistry()
    reg.add("list_files", "ls", {"type": "object"}, lambda a, c: "a.txt", toolset="file")
    child = AgentSession(model=DemoModel(FAST), tools=reg.resolve(), role="leaf", metadata={"goal": "count files"})
    result = await child.run_turn("count files")
    assert result.exit_reason == "completed"
    assert [e.name for e in result.tool_trace] == ["list_files", "list_files"]
    assert "count files" in result.text and result.text.startswith(DEMO_TAG)


async def test_child_markers_fail_slow_and_stall():
    model = DemoModel(FAST)
    with pytest.raises(ModelError):
        await model.complete(ModelRequest([user("x")], role="leaf", metadata={"goal": "do [fail]"}))
    slow = ModelRequest([user("x")], tools=[LIST_FILES], role="leaf", iteration=4, metadata={"goal": "[slow:5]"})
    assert (await model.complete(slow)).tool_calls
    stalled = asyncio.create_task(model.complete(ModelRequest([user("x")], role="leaf", metadata={"goal": "[stall]"})))
    reg = ToolRegistry()
    reg.add("list_files", "ls", {"type": "object"}, lambda a, c: "a.txt", toolset="file")
    later = AgentSession(model=model, tools=reg.resolve(), role="leaf", metadata={"goal": "[slow:5]"})
    # A child started after it takes five steps and reports; the stalled call still has no answer.
    assert (await later.run_turn("[slow:5]")).exit_reason == "completed"
    assert not stalled.done()
    stalled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stalled


async def test_a_refused_delegation_is_answered_with_the_real_error():
    error = "Error: Too many tasks: got 11, but at most 10 run at once (delegation.max_concurrent_children)."
    messages = [user("\n".join(f"- item {i}" for i in range(11))), {"role": "tool", "content": error}]
    resp = await DemoModel(FAST).complete(ModelRequest(messages, tools=[DELEGATE]))
    assert resp.text == f"{DEMO_TAG} delegate_task refused the list: {error.removeprefix('Error: ')}"
    assert "Send me a list" not in resp.text

