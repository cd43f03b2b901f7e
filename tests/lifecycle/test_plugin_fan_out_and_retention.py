"""Two things docs/lifecycle.md tells a plugin author: a fan-out gathered with its errors keeps the handle of every
child it launched, and a handle whose child the retention sweep forgot reads as an unknown one."""

from __future__ import annotations

import asyncio

import pytest

from lifecycle import (
    AsyncSubagentLifecycle,
    MemoryJournal,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentState,
)
from lifecycle._contract import RECONNECT_UNAVAILABLE, UNKNOWN_HANDLE
from lifecycle.settings import LifecycleSettings

S = SubagentState


@pytest.fixture(params=["sqlite", "memory"])
async def service_env(request, make_env):
    env = await make_env(max_running=2, retention=60)
    if request.param == "memory":
        env.service = AsyncSubagentLifecycle(env.service.host, MemoryJournal(),
                                             settings=LifecycleSettings(max_running=2, retention_seconds=60))
        await env.service.start()
    yield env
    await env.service.close()


async def test_a_fan_out_gathered_with_its_errors_keeps_every_handle_to_stop(service_env):
    # Launches are no transaction: those that went through have launched their children (on the memory
    # journal, before the refused one is even looked at). The docs' fan-out keeps their handles.
    env, service = service_env, service_env.service
    goals = ["[hang] a", "[hang] b", "", "[hang] c", "[hang] d"]
    with env.turn():
        launched = await asyncio.gather(*(service.launch(SubagentLaunchRequest(goal)) for goal in goals),
                                        return_exceptions=True)
        assert [type(x).__name__ for x in launched] == ["SubagentHandle"] * 2 + ["SubagentLifecycleError"] + [
            "SubagentHandle"] * 2
        handles = [x for x in launched if not isinstance(x, SubagentLifecycleError)]
        for handle in handles:
            assert (await service.cancel(handle)).accepted
        for handle in handles:
            assert (await asyncio.wait_for(service.wait(handle), 5)).state is S.CANCELLED
        assert service.host_view().children("parent-1") == ()
        assert service.engine.running == 0
        # Both places under max_running are free: children launched now run at once.
        after = [await service.launch(SubagentLaunchRequest(f"after {i}")) for i in range(2)]
        for handle in after:
            assert (await asyncio.wait_for(service.wait(handle), 5)).state is S.SUCCEEDED


async def test_a_handle_whose_child_the_sweep_forgot_reads_as_unknown(service_env):
    env, service = service_env, service_env.service
    with env.turn():
        handle = await service.launch(SubagentLaunchRequest("remember me"))
        assert (await service.wait(handle)).state is S.SUCCEEDED
        assert (await service.result(handle)).ready
    env.clock.advance(61)
    await service.sweep()
    with env.turn():
        for kept in (handle, handle.to_dict()):
            assert (await service.status(kept)).diagnostic == UNKNOWN_HANDLE
            assert (await service.result(kept)).error_classification == UNKNOWN_HANDLE
            done = await asyncio.wait_for(service.wait(kept), 1)
            assert (done.state, done.completed, done.diagnostic) == (S.UNKNOWN, True, UNKNOWN_HANDLE)
            assert (await service.reconnect(kept)).diagnostic == RECONNECT_UNAVAILABLE
            assert (await service.cancel(kept)).unknown_handle
