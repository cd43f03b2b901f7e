"""What a restarted service says of the children it re-attaches to on Temporal, from the moment its start
returns: one a worker runs is RUNNING since it began there, one no worker has taken waits for one."""

from __future__ import annotations

import asyncio
import time

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.conftest import FakeClock
from tests.polling import until

S = SubagentState
LATER = 1000.0
"""How far the restarted service's clock is ahead: a start time it made up at the restart shows."""


async def test_a_child_mid_call_on_a_worker_reads_running_since_it_began_there_after_a_restart(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    began = time.time()
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="long job"))
        await asyncio.wait_for(model.reached("gate"), 10)  # its model call is in flight on the worker
    called = time.time()
    await first.service.close()

    clock = FakeClock()
    clock.advance(LATER)
    engine = TemporalEngine(settings, client=client)
    second = await make_env(engine=engine, db="shared.db", clock=clock)
    try:
        [child] = second.service.host_view().children("parent-1")
        assert child.state is S.RUNNING  # as soon as the start returns, without waiting on the worker
        assert child.started_at is not None and began - 1 <= child.started_at <= called + 1
        assert engine.activity(handle.subagent_id) != "waiting for a worker"
        await until(lambda: engine.activity(handle.subagent_id) == "waiting for the model")
    finally:
        model.release("gate")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED


async def test_a_child_no_worker_has_taken_still_waits_for_one_after_a_restart(make_env, queue):
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="queued"))
    workflow = client.get_workflow_handle(handle.subagent_id)

    async def exists() -> bool:
        try:
            await workflow.describe()
        except Exception:
            return False
        return True

    await until(exists)
    await first.service.close()

    engine = TemporalEngine(settings, client=client)
    second = await make_env(engine=engine, db="shared.db")
    [child] = second.service.host_view().children("parent-1")
    assert (child.state, child.started_at) == (S.PENDING, None)
    assert engine.activity(handle.subagent_id) == "waiting for a worker"
    await worker(ScriptedModel({"leaf": lambda r: {"text": "ran later"}}))
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "ran later"
