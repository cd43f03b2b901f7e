"""A launch committed to the journal gets its child's workflow started, however the gateway stops.

`launch` returns once the child is journaled; the engine starts its workflow just after. A gateway
that closes, or is killed, in between must not lose the child (on Temporal a restart interrupts no
child), and no start, sent again, may run a child twice.
"""

from __future__ import annotations

import asyncio

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import crash
from tests.polling import until

S = SubagentState


async def no_workflow(client: Client, subagent_id: str) -> bool:
    try:
        await client.get_workflow_handle(subagent_id).describe()
    except RPCError as exc:
        return exc.status is RPCStatusCode.NOT_FOUND
    return False


async def test_a_child_whose_gateway_was_killed_before_its_workflow_started_runs_after_the_restart(make_env, queue):
    """A SIGKILL between the launch's commit and the workflow's start: the journal has the launch,
    Temporal nothing. The next start starts the child instead of calling it interrupted."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran after the restart"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="launched, then killed"))
    crash(first.service.engine)
    assert await no_workflow(client, handle.subagent_id)

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    stops = []
    second.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "ran after the restart"
    assert stops == ["completed"] and len(model.requests) == 1


async def test_a_child_whose_workflow_was_deleted_while_the_gateway_was_down_is_not_started_again(make_env, queue):
    """Temporal no longer has the child's workflow (an operator deleted it, or it ended longer ago than
    the namespace keeps histories): a child whose workflow Temporal once had is not taken for a launch
    never started, and run a second time."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran twice"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="runs once"))
        await asyncio.wait_for(model.reached("gate"), 10)
    await first.service.close()
    await client.workflow_service.delete_workflow_execution(DeleteWorkflowExecutionRequest(
        namespace=settings.namespace, workflow_execution=WorkflowExecution(workflow_id=handle.subagent_id)))
    await until(lambda: no_workflow(client, handle.subagent_id))

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        result = await second.service.result(handle)
    model.release("gate")
    assert (result.state, result.error_message) == (S.INTERRUPTED, "interrupted by process exit")
    assert len(model.requests) == 1
