"""Every worker gone while a child's call runs: Temporal holds the call for another worker, and none comes. /agents
must say the child waits for a worker, not that another worker runs it."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import TemporalEngine
from tests.polling import until

S = SubagentState


async def test_a_call_whose_only_worker_stopped_reads_waiting_for_a_worker(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done on the next worker"}})
    running = await worker(model)
    env = await make_env(engine=TemporalEngine(settings, client=client),
                         delegation=DelegationSettings(heartbeat_interval_seconds=0.2))
    view = env.service.host_view()
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="orphaned"))
        await asyncio.wait_for(model.reached("gate"), 10)
        await until(lambda: view.children("parent-1")[0].state is S.RUNNING)
    await running.__aexit__(None, None, None)  # the only worker; its call is handed back to Temporal for another

    workflow = client.get_workflow_handle(handle.subagent_id)

    async def retried() -> bool:
        pending = (await workflow.describe()).raw_description.pending_activities
        return bool(pending) and pending[-1].attempt > 1

    await until(retried, 15, every=0.05)
    await until(lambda: "attempt 2" in view.children("parent-1")[0].activity, 10, every=0.05)
    activity = view.children("parent-1")[0].activity
    assert activity == "waiting for a worker to call the model again (attempt 2: its worker was lost)"

    model.release("gate")
    await worker(model)  # a worker comes back: it takes the call, and the child ends once
    with env.turn():
        assert (await env.service.wait(handle, timeout_seconds=20)).state is S.SUCCEEDED
        assert (await env.service.result(handle)).summary == "done on the next worker"
