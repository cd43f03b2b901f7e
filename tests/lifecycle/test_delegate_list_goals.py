"""delegate_task ``action=list`` shows an excerpt of each child's goal, not the goal whole: the result stays in
the conversation the model reads again at every request, and a goal may be 16,000 characters."""

from __future__ import annotations

import json

import pytest

from agent import ToolContext
from lifecycle import delegate_tool
from tests.lifecycle.test_delegate import Host
from tests.polling import until

LISTED_GOAL_CHARS = 200  # docs/delegation.md


@pytest.fixture
async def denv(make_env):
    return await make_env(delegate=True)


async def test_a_long_goal_is_listed_as_an_excerpt_that_says_it_was_cut(denv):
    host = Host(denv)
    tool = delegate_tool(denv.service, mode="background", on_dispatch=host)
    context = ToolContext(denv.parent, "call-1", denv.parent.workspace, {}, "turn-1")
    long_goal = "[hang] " + "review every module of the billing service; " * 360  # about 16,000 characters
    short_goal = "[hang] a short one"
    await tool.invoke({"tasks": [{"goal": long_goal}, {"goal": short_goal}]}, context)

    async def listing():
        return json.loads(await tool.invoke({"action": "list"}, context))["subagents"]

    await until(lambda: len(denv.service.host_view().children("parent-1")) == 2)
    long, short = sorted(await listing(), key=lambda child: -len(child["goal"]))
    assert len(long["goal"]) == LISTED_GOAL_CHARS and long["goal"].endswith("…")
    assert long_goal.startswith(long["goal"][:-1])
    assert long["goal_cut"] == (f"only the first {LISTED_GOAL_CHARS - 1} of its {len(long_goal):,} characters;"
                                " the subagent has it whole")
    assert short["goal"] == short_goal and "goal_cut" not in short
    for child in denv.service.host_view().children("parent-1"):
        await tool.invoke({"action": "stop", "subagent_id": child.subagent_id}, context)
    await host.delivered.get()
