"""delegate_task results stay small for the parent model, which reads them again at every request: a result
entry keeps its child's latest tool calls only, the dispatch result shows each goal's start, and action=list
lists the latest children only; each says what it left out."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent import ToolContext
from lifecycle import delegate_tool
from lifecycle.settings import DelegationSettings
from tests.lifecycle.test_delegate import Host, results
from tests.polling import until

TRACE_IN_RESULT = 20  # docs/delegation.md, result entries
LISTED_GOAL_CHARS = 200  # docs/delegation.md, background
LISTED_CHILDREN = 20


def background(env):
    host = Host(env)
    tool = delegate_tool(env.service, mode="background", on_dispatch=host)
    return host, tool, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1")


async def test_a_result_entry_keeps_the_latest_tool_calls_and_counts_the_others(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_iterations=TRACE_IN_RESULT + 7))
    long, short = await results(env, {"tasks": [{"goal": "[tools-forever]"}, {"goal": "plain"}]})
    assert long["api_calls"] == TRACE_IN_RESULT + 7
    assert len(long["tool_trace"]) == TRACE_IN_RESULT and long["tool_trace_omitted"] == 7
    assert short["tool_trace"] == [] and "tool_trace_omitted" not in short


async def test_the_dispatch_result_shows_a_long_goal_cut_and_says_so(make_env):
    env = await make_env(delegate=True)
    host, tool, context = background(env)
    long_goal = ("review every module of the billing service; " * 360).strip()  # about 16,000 characters
    payload = json.loads(await tool.invoke({"tasks": [{"goal": long_goal}, {"goal": "short"}]}, context))
    long, short = payload["goals"]
    assert len(long) == LISTED_GOAL_CHARS and long.endswith("…") and long_goal.startswith(long[:-1])
    assert short == "short"
    assert payload["goals_cut"] == (f"a goal over {LISTED_GOAL_CHARS} characters is shown here as its first "
                                    f"{LISTED_GOAL_CHARS - 1} and …; each subagent has its goal whole")
    dispatch, entries = await asyncio.wait_for(host.delivered.get(), 10)
    assert dispatch.tasks[0].spec.goal == long_goal  # the child got it whole
    assert [e["summary"] for e in entries] == [f"done: {long_goal}", "done: short"]

    whole = json.loads(await tool.invoke({"goal": "x" * LISTED_GOAL_CHARS}, context))
    assert whole["goals"] == ["x" * LISTED_GOAL_CHARS] and "goals_cut" not in whole
    await asyncio.wait_for(host.delivered.get(), 10)


@pytest.mark.parametrize("extra", [0, 3])
async def test_list_shows_the_latest_children_and_counts_the_others(make_env, extra):
    count = LISTED_CHILDREN + extra
    env = await make_env(delegate=True, delegation=DelegationSettings(max_concurrent_children=count))
    host, tool, context = background(env)
    payload = json.loads(await tool.invoke({"tasks": [{"goal": f"[hang] {i}"} for i in range(count)]}, context))
    await until(lambda: len(env.service.host_view().children("parent-1")) == count)
    listed = json.loads(await tool.invoke({"action": "list"}, context))
    assert [c["subagent_id"] for c in listed["subagents"]] == payload["subagent_ids"][extra:]
    if extra:
        assert listed["not_listed"] == (f"{extra} older subagents are not listed, only the latest {LISTED_CHILDREN}"
                                        " (the dispatch results name them all)")
    else:
        assert "not_listed" not in listed
    for sid in payload["subagent_ids"]:
        await tool.invoke({"action": "stop", "subagent_id": sid}, context)
    await asyncio.wait_for(host.delivered.get(), 10)
