"""After `close`, the host view's waits and an inline delegate_task waiting for a child the closed service still
holds unfinished end, as `wait` does: nothing will tell this process how the child ends (on Temporal it runs on, on
its worker; in-process, one the close's grace left behind), and waiting would never end."""

from __future__ import annotations

import asyncio

import pytest

from agent import ToolContext, ToolError
from lifecycle import SubagentLaunchRequest, SubagentLifecycleError, SubagentState, delegate_tool
from tests.lifecycle.test_stop_at_close import tidying_slowly
from tests.polling import until

S = SubagentState


async def _left_running(make_env, engine_name):
    """A service whose children outlive its close: in-process, by ignoring their stop until ``let_go``."""
    env = await make_env()
    if engine_name == "inprocess":
        _, tidied = tidying_slowly(env)
        return env, "[stall-tool]", tidied.set
    return env, "[gate:held]", lambda: env.child_model.release("held")


@pytest.mark.both_engines
async def test_the_host_views_waits_end_when_the_service_closes_and_do_not_wait_after(make_env, engine_name):
    env, goal, let_go = await _left_running(make_env, engine_name)
    service, view = env.service, env.service.host_view()
    with env.turn():
        handle = await service.launch(SubagentLaunchRequest(goal=goal))

        async def running() -> bool:
            return (await service.status(handle)).state is S.RUNNING

        await until(running)
    sid = handle.subagent_id
    try:
        waiting = asyncio.ensure_future(view.wait_finished([sid]))  # under way as the close ends
        entries = asyncio.ensure_future(view.finished_entries([(0, sid)], env.parent.workspace))
        await asyncio.sleep(0)
        await service.close(grace=0.01)
        for wait in (waiting, entries):
            with pytest.raises(SubagentLifecycleError) as closed:
                await asyncio.wait_for(wait, 5)  # they never returned
            assert closed.value.code == "CLOSED"
        with pytest.raises(SubagentLifecycleError) as closed:
            await asyncio.wait_for(view.wait_finished([sid]), 5)  # asked after the close: it does not wait
        assert closed.value.code == "CLOSED"
        await asyncio.wait_for(view.wait_finished(["sa-unknown"]), 5)  # unknown ones count as finished, as before
    finally:
        let_go()


@pytest.mark.both_engines
async def test_an_inline_delegate_task_waiting_when_the_service_closes_fails_instead_of_hanging(make_env,
                                                                                                engine_name):
    env, goal, let_go = await _left_running(make_env, engine_name)
    service = env.service
    tool = delegate_tool(service)
    try:
        calling = asyncio.ensure_future(
            tool.handler({"goal": goal}, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1")))

        async def running() -> bool:
            return any(c.state is S.RUNNING for c in service.host_view().children("parent-1"))

        await until(running)
        await service.close(grace=0.01)
        with pytest.raises(ToolError, match="the lifecycle service closed before the subagents ended"):
            await asyncio.wait_for(calling, 5)  # it never returned
    finally:
        let_go()
