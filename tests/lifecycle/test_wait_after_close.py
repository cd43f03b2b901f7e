"""After `close`, a wait for a child the service still holds unfinished returns at once, as a timed-out wait
does, with diagnostic ``CLOSED``: nothing will tell this process how the child ends. On Temporal the child runs
on, on its worker; in-process, one the close's grace left behind."""

from __future__ import annotations

import asyncio

import pytest

from lifecycle import NOT_READY, SubagentLaunchRequest, SubagentState
from tests.lifecycle.test_stop_at_close import tidying_slowly
from tests.polling import until

S = SubagentState


@pytest.mark.both_engines
async def test_a_wait_for_a_child_the_closed_service_no_longer_follows_returns_at_once(make_env, engine_name):
    # A wait with no timeout never returned: the engine no longer followed the child, so no end would come.
    env = await make_env()
    if engine_name == "inprocess":
        _, tidied = tidying_slowly(env)  # ignores its stop until told: left behind by the close's grace
        goal, let_go = "[stall-tool]", tidied.set
    else:  # runs on, on its worker, once the gateway has closed
        goal, let_go = "[gate:held]", lambda: env.child_model.release("held")
    service = env.service
    with env.turn():
        handle = await service.launch(SubagentLaunchRequest(goal=goal))

        async def running() -> bool:
            return (await service.status(handle)).state is S.RUNNING

        await until(running)
        waiting = asyncio.ensure_future(service.wait(handle))  # under way as the close ends
        timed = asyncio.ensure_future(service.wait(handle, timeout_seconds=3600))
        await asyncio.sleep(0)
    try:
        await service.close(grace=0.01)
        for wait in (waiting, timed):
            ended = await asyncio.wait_for(wait, 5)
            assert (ended.handle, ended.state, ended.completed, ended.timed_out, ended.diagnostic) == (
                handle, S.RUNNING, False, True, "CLOSED")
        with env.turn():
            asked = await asyncio.wait_for(service.wait(handle), 5)  # asked after the close: it does not wait
            assert (asked.state, asked.completed, asked.timed_out, asked.diagnostic) == (S.RUNNING, False, True,
                                                                                          "CLOSED")
            assert (await service.result(handle)).error_classification == NOT_READY  # the other reads, as before
            assert (await service.status(handle)).state is S.RUNNING
    finally:
        let_go()
