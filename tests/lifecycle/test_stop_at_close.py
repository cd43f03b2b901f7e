"""A child stopped on purpose that the process stops, or leaves behind, while it winds down ends with its
stop's reason, never as interrupted by process exit (which a host takes for lost, and may run again)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from lifecycle import PROCESS_EXIT, SubagentLaunchRequest, SubagentState
from tests.polling import until

S = SubagentState


def tidying_slowly(env) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the children's ``block`` tool (``[stall-tool]``) tidy up, once cancelled, until the second event
    is set; the first is set once a child is in it."""
    reached, tidied = asyncio.Event(), asyncio.Event()

    async def block(args, ctx):
        reached.set()
        try:
            await asyncio.Event().wait()
        finally:
            await tidied.wait()

    tools = env.parent.tools  # children inherit their parent's tools
    tools["block"] = dataclasses.replace(tools["block"], handler=block)
    return reached, tidied


async def stopped_while_in_its_tool(env, stop: str):
    reached, tidied = tidying_slowly(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="tidy up [stall-tool]"))
        await reached.wait()
        if stop == "cancel":
            assert (await env.service.cancel(handle, "no longer needed")).accepted
        else:
            assert await env.service.host_view().interrupt_child(handle.subagent_id, "stopped by /stop")
    return handle, tidied


SAID = {"cancel": (S.CANCELLED, "cancellation requested: no longer needed"),
        "interrupt": (S.INTERRUPTED, "stopped by /stop")}


@pytest.mark.parametrize("stop", ["cancel", "interrupt"])
async def test_a_stopped_child_ending_while_the_service_closes_ends_with_its_stop(make_env, stop):
    env = await make_env()
    handle, tidied = await stopped_while_in_its_tool(env, stop)
    closing = asyncio.ensure_future(env.service.close())
    await until(lambda: env.service.engine._closed)  # the close has stopped every child, and waits for them
    tidied.set()
    await closing
    with env.turn():
        result = await env.service.result(handle)
    assert (result.state, result.error_message) == SAID[stop]


@pytest.mark.parametrize("stop", ["cancel", "interrupt"])
async def test_a_stopped_child_left_behind_by_the_close_ends_with_its_stop_at_the_next_start(make_env, stop):
    env = await make_env()
    handle, tidied = await stopped_while_in_its_tool(env, stop)
    await env.service.close(grace=0.01)  # it still tidies up: left behind, as a SIGKILL would leave it
    env2 = await make_env()
    with env2.turn():
        result = await env2.service.result(handle)
    tidied.set()
    # As it would have ended had it stopped before the process did: a cancel's child CANCELLED.
    assert (result.state, result.error_message) == SAID[stop]
    assert result.error_message != PROCESS_EXIT
