"""An inline delegate_task passes its parent's interrupt on to the children in a task of its own (a listener
cannot await): held until it ends, its failure logged by the lifecycle rather than "never retrieved" by asyncio,
and waited for by the service's close, not left pending behind it."""

from __future__ import annotations

import asyncio
import logging

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from tests.lifecycle.conftest import child_script


async def test_the_passed_on_interrupt_is_held_logged_and_waited_for_by_the_close(make_env, caplog):
    env = await make_env(delegate=True)
    supervisor = env.service._supervisor
    real, gate, passing = supervisor.interrupt, asyncio.Event(), asyncio.Event()

    async def interrupt(records, reason, **kw):
        if not reason.startswith("parent interrupted"):  # the close's own stop
            return await real(records, reason, **kw)
        passing.set()
        await gate.wait()
        raise RuntimeError("the engine refused the stop")

    supervisor.interrupt = interrupt
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "[hang] one"}}]},
                    {"text": "after"}]],
        "leaf": child_script,
    })
    parent = AgentSession(model=model, tools=env.parent.tools, session_id="parent-1", workspace=env.parent.workspace)
    turn = asyncio.create_task(parent.run_turn("go"))
    async with asyncio.timeout(5):
        while not any(r.role == "leaf" for r in model.requests):
            await asyncio.sleep(0.005)
    parent.interrupt("user said stop", hard=True)
    assert (await asyncio.wait_for(turn, 5)).exit_reason == "interrupted"
    await asyncio.wait_for(passing.wait(), 5)

    closing = asyncio.ensure_future(env.service.close())
    async with asyncio.timeout(5):
        while not closing.done() and supervisor._drained is None:
            await asyncio.sleep(0.001)
    assert not closing.done()  # it waits for the interrupt under way
    with caplog.at_level(logging.ERROR):
        gate.set()
        await asyncio.wait_for(closing, 5)
    failures = [r for r in caplog.records if r.name == "lifecycle.service" and r.exc_info]
    assert [str(r.exc_info[1]) for r in failures] == ["the engine refused the stop"]
