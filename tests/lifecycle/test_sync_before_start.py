"""The synchronous facade before `start` answers as its asyncio twin does: reads of any handle as for an
unknown one, a launch refused as not started."""

from __future__ import annotations

import asyncio

import pytest

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import (
    AsyncSubagentLifecycle,
    ChildHost,
    MemoryJournal,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
    SubagentState,
)

S = SubagentState
FORGED = SubagentHandle("1", "sa-kept", "parent-1", None, 0.0, None, None, "leaf", 1, "v1.k.forged")


async def test_before_start_the_facade_reads_as_its_async_twin_does():
    # The facade raised NOT_STARTED for status, wait and result (it had no loop to hand them to), where
    # the async twin answers UNKNOWN: a plugin polling handles it kept failed on one and not on the other.
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())
    facade = SubagentLifecycle(service)
    with inside_turn(AgentSession(model=ScriptedModel(), session_id="parent-1")):
        status = await asyncio.to_thread(facade.status, FORGED)
        expected = await service.status(FORGED)
        assert (status.handle, status.state, status.diagnostic) == (expected.handle, S.UNKNOWN, expected.diagnostic)
        for read in ("wait", "result", "reconnect", "cancel"):
            assert await asyncio.to_thread(getattr(facade, read), FORGED) == await getattr(service, read)(FORGED)
        assert await asyncio.to_thread(facade.wait, FORGED.to_dict(), 5) == await service.wait(FORGED.to_dict(), 5)
        assert await asyncio.to_thread(facade.steer, FORGED, "hello") is False
        with pytest.raises(SubagentLifecycleError, match="timeout_seconds must be a number"):
            await asyncio.to_thread(facade.wait, FORGED, "soon")
        with pytest.raises(SubagentLifecycleError) as refused:
            await asyncio.to_thread(facade.launch, SubagentLaunchRequest(goal="too early"))
        assert refused.value.code == "NOT_STARTED"
    with pytest.raises(SubagentLifecycleError, match="No active parent session"):  # outside a turn, as the twin
        await asyncio.to_thread(facade.launch, SubagentLaunchRequest(goal="too early"))
    assert service.loop is None  # nothing was started by the reads
    await service.start()
    try:
        with inside_turn(AgentSession(model=ScriptedModel(), session_id="parent-1")):
            assert (await asyncio.to_thread(facade.status, FORGED)).state is S.UNKNOWN  # and as before, once started
    finally:
        await service.close()
