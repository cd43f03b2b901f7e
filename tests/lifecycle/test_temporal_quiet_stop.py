"""Stopping a child is normal operation: the worker whose call the stop cut off logs no failure for it
(temporalio logs an activity that ends by raising a cancellation it did not ask for as a failed one)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent import ModelRequest, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.conftest import OBJ, make_registry

S = SubagentState


class _Noting(ScriptedModel):
    """Sets ``cut_off`` when a call of its (or a ``block`` tool call, see `_worker_tools`) is cancelled:
    the stop reached the worker's call."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cut_off = asyncio.Event()
        self.in_block = asyncio.Event()

    async def complete(self, request: ModelRequest):
        try:
            return await super().complete(request)
        except asyncio.CancelledError:
            self.cut_off.set()
            raise


def _worker_tools(model: _Noting) -> ToolRegistry:
    """The children's tools, with a ``block`` that tells ``model`` when it runs and when it is cancelled."""

    async def block(args, ctx):
        model.in_block.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            model.cut_off.set()
            raise

    tools = ToolRegistry()
    for tool in make_registry():
        if tool.name != "block":
            tools.register(tool)
    tools.add("block", "hangs until cancelled", OBJ, block, toolset="file")
    return tools


def _leaf(request: ModelRequest) -> dict:
    if request.iteration == 0:
        return {"text": "halfway there", "tool_calls": [{"name": "list_files"}]}
    if "[in-tool]" in request.metadata["goal"]:
        return {"tool_calls": [{"name": "block"}]} if request.iteration == 1 else {"text": "never"}
    return {"wait": "gate", "text": "never"}


@pytest.mark.parametrize(("goal", "stop", "state", "reason"), [
    ("stop me while I think", "/stop", S.INTERRUPTED, "stopped by /stop"),
    ("cancel me while I think", "cancel", S.CANCELLED, "cancellation requested: changed my mind"),
    ("stop me in a tool [in-tool]", "/stop", S.INTERRUPTED, "stopped by /stop"),
])
async def test_a_stopped_childs_worker_logs_no_failed_call(make_env, queue, caplog, goal, stop, state, reason):
    settings, client, worker = queue
    model = _Noting({"leaf": _leaf})
    running = await worker(model, _worker_tools(model))
    # The stop reaches the call at its next heartbeat: each 5 s by default, a wait of up to 5 s.
    env = await make_env(engine=TemporalEngine(settings, client=client),
                         delegation=DelegationSettings(heartbeat_interval_seconds=0.5))
    with caplog.at_level(logging.WARNING, logger="temporalio"), env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal=goal))
        reached = model.in_block.wait() if "[in-tool]" in goal else model.reached("gate")
        await asyncio.wait_for(reached, 10)
        if stop == "/stop":
            assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 1
        else:
            await env.service.cancel(handle, reason="changed my mind")
        assert (await env.service.wait(handle, timeout_seconds=10)).state is state
        result = await env.service.result(handle)
        await asyncio.wait_for(model.cut_off.wait(), 10)  # the call in flight was cut off by the stop
        await running.shutdown()  # returns once every call it ran has reported how it ended
    assert result.summary == "halfway there" and result.error_message == reason  # the partial output, as before
    noise = [r for r in caplog.records if r.name.startswith("temporalio") and r.levelno >= logging.WARNING]
    assert noise == [], [f"{r.levelname} {r.getMessage()}" for r in noise]
