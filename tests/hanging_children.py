"""A scripted model whose children hang, for /stop, /new and /agents in every platform's chat.

The parent delegates `HANGING_CHILDREN` when the user's message asks it to ("delegate"); each
child takes one step with some partial output, then waits in its next model call for good (a
``{"wait": goal}`` step no test releases), so a stop finds them running with something to report.
"""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from agent.models.scripted import ScriptedModel

HANGING_CHILDREN = {"tasks": [{"goal": "first [hang]"}, {"goal": "second [hang]"}]}


def hanging_child(request: ModelRequest) -> dict:
    goal = request.metadata.get("goal", "")
    if request.iteration == 0:
        return {"text": f"partial work on {goal}", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    return {"wait": goal}


def delegating_parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and "delegat" in str(last["content"]).lower():
        return {"tool_calls": [{"name": "delegate_task", "arguments": HANGING_CHILDREN}]}
    if last["role"] == "tool":
        return {"text": "I started the subagents."}
    return {"text": "all done"}


async def children_hanging(model: ScriptedModel) -> None:
    """Until every child did its first step and waits in its second model call."""
    async with asyncio.timeout(5):
        for task in HANGING_CHILDREN["tasks"]:
            await model.reached(task["goal"])
