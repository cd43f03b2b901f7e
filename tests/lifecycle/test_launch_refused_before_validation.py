"""A launch the service cannot take is refused as such (``NOT_STARTED``, ``CLOSING``, ``CLOSED``) whatever the
request holds: it validated the request first, so an invalid one raised its own error instead, and a plugin
that fixed it was refused again for a reason it had not been told."""

import asyncio

import pytest

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentLifecycleError
from tests.polling import until

INVALID = (
    SubagentLaunchRequest(goal=""),
    SubagentLaunchRequest(goal="fine", timeout_seconds=5),
    SubagentLaunchRequest(goal="fine", allowed_toolsets=("no-such-toolset",)),
    SubagentLaunchRequest(goal="fine", parent_session_id="someone-else"),
)


async def _refusals(service, turn) -> set[str]:
    codes = set()
    for request in INVALID:
        with turn(), pytest.raises(SubagentLifecycleError) as refused:
            await service.launch(request)
        codes.add(refused.value.code)
    return codes


async def test_an_invalid_launch_before_start_and_after_close_is_refused_as_not_open():
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())

    def turn():
        return inside_turn(AgentSession(model=ScriptedModel(), session_id="parent-1"))

    assert await _refusals(service, turn) == {"NOT_STARTED"}
    await service.start()
    await service.close()
    assert await _refusals(service, turn) == {"CLOSED"}


async def test_an_invalid_launch_while_the_service_closes_is_refused_as_closing(env):
    journal, release = env.service.journal, asyncio.Event()
    real_close = journal.close

    async def held_close():  # the close stays under way, past the point where it refuses launches
        await release.wait()
        await real_close()

    journal.close = held_close
    closing = asyncio.ensure_future(env.service.close())
    try:
        await until(lambda: env.service._supervisor.sealed)
        assert await _refusals(env.service, env.turn) == {"CLOSING"}
    finally:
        release.set()
        await closing
