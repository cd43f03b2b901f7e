"""A plugin's thread that outlives the service's event loop (the process stopping) is told the service
closed: the synchronous facade said ``The lifecycle service is not started.`` of a service that had run."""

import asyncio

import pytest

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import (
    AsyncSubagentLifecycle,
    ChildHost,
    MemoryJournal,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
)


def test_after_its_event_loop_has_closed_the_facade_says_the_service_is_closed():
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())
    facade = SubagentLifecycle(service)

    async def run_and_close():
        await service.start()
        with inside_turn(AgentSession(model=ScriptedModel({"leaf": lambda request: {"text": "done"}}))):
            handle = await service.launch(SubagentLaunchRequest(goal="review"))
            await service.wait(handle, timeout_seconds=5)
        await service.close()
        return handle

    handle = asyncio.run(run_and_close())
    for call in (lambda: facade.status(handle), lambda: facade.launch(SubagentLaunchRequest(goal="again"))):
        with pytest.raises(SubagentLifecycleError) as refused:
            call()
        assert (refused.value.code, str(refused.value)) == ("CLOSED", "The lifecycle service is closed.")
