"""What a restarted service says of the children it re-attaches to on Temporal, from the moment its start
returns: one a worker runs is RUNNING since it began there, one no worker has taken waits for one."""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio.api.enums.v1 import EventType
from temporalio.common import WorkflowIDConflictPolicy

from agent.models.scripted import ScriptedModel
from lifecycle import PROCESS_EXIT, SubagentLaunchRequest, SubagentState
from lifecycle.temporal import WORKFLOW, TemporalEngine
from tests.lifecycle.conftest import FakeClock
from tests.lifecycle.test_temporal import exists, until_in_history
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


async def test_a_child_whose_workflow_this_version_cannot_read_ends_alone_and_the_others_are_followed(
        make_env, queue, caplog):
    """One unfinished child whose workflow's input this version refuses (a newer gateway launched it with a job
    field this one does not know, then was rolled back) failed the whole start, and with it the gateway's: no
    other child was followed. It alone ends now, interrupted, logged once by id, and its workflow is asked to
    stop, as no process follows it any more."""
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        kept = await first.service.launch(SubagentLaunchRequest(goal="readable"))
        newer = await first.service.launch(SubagentLaunchRequest(goal="carried on by a newer version"))
    workflow = client.get_workflow_handle(newer.subagent_id)
    await until(lambda: exists(client.get_workflow_handle(kept.subagent_id)))
    await until(lambda: exists(workflow))
    await first.service.close()
    # Its workflow as the newer version would have started it: the same input, with one field more in the job.
    async for event in workflow.fetch_history_events():
        (wire,) = await client.data_converter.decode(event.workflow_execution_started_event_attributes.input.payloads,
                                                     [dict])
        break
    wire["job"]["a_newer_field"] = 1
    await client.start_workflow(WORKFLOW, wire, id=newer.subagent_id, task_queue=settings.task_queue,
                                id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)

    with caplog.at_level(logging.WARNING, logger="lifecycle.temporal"):
        second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    [child] = second.service.host_view().children("parent-1")
    assert (child.subagent_id, child.state) == (kept.subagent_id, S.PENDING)  # followed: waits for a worker
    with second.turn():
        lost = await second.service.result(newer)
    assert (lost.state, lost.error_message) == (S.INTERRUPTED, PROCESS_EXIT)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and newer.subagent_id in errors[0] and "a_newer_field" in errors[0], errors
    await until_in_history(workflow, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)  # not left to run

    await worker(ScriptedModel({"leaf": lambda r: {"text": "ran after the restart"}}))
    with second.turn():
        assert (await second.service.wait(kept, timeout_seconds=10)).state is S.SUCCEEDED
