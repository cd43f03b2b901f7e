"""A worker's stop while a child's tool ignores its cancellation: Temporal's shutdown would wait for
that call for ever; the worker's stop ends past its grace and a second more, naming the call."""

from __future__ import annotations

import asyncio
import logging

from agent import ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal._worker import STUCK_WAIT_SECONDS
from tests.lifecycle.conftest import OBJ, make_registry

BOUND = STUCK_WAIT_SECONDS + 10.0
"""The worker's grace (none here), a second, and slack for a loaded machine."""


async def test_a_call_that_ignores_its_cancellation_does_not_hold_the_workers_stop(make_env, queue, caplog):
    settings, client, worker = queue
    in_tool, let_go = asyncio.Event(), asyncio.Event()

    async def stubborn(args, ctx):
        in_tool.set()
        while not let_go.is_set():
            try:
                await let_go.wait()
            except asyncio.CancelledError:
                continue
        return "done at last"

    tools = ToolRegistry()  # the worker's: its "block" (a tool children get) never gives in
    for tool in make_registry():
        if tool.name != "block":
            tools.register(tool)
    tools.add("block", "never gives in", OBJ, stubborn, toolset="file")
    model = ScriptedModel({"leaf": [[{"tool_calls": [{"name": "block"}]}, {"text": "never"}]]})
    running = await worker(model, tools)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    try:
        with env.turn():
            handle = await env.service.launch(SubagentLaunchRequest(goal="call the stubborn tool"))
            await asyncio.wait_for(in_tool.wait(), 10)
        with caplog.at_level(logging.ERROR, logger="lifecycle.temporal.worker"):
            async with asyncio.timeout(BOUND):
                await running.__aexit__(None, None, None)
        [line] = [r.getMessage() for r in caplog.records if "left behind" in r.getMessage()]
        assert line == (f"tool block of child {handle.subagent_id} did not end within 1 s of its cancellation "
                        "(it ignores cancellation): left behind, another worker runs it once this process has ended")
    finally:
        let_go.set()  # the call left behind ends before the test's loop closes
