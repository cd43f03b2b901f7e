"""A child whose workflow an operator deletes from Temporal (`temporal workflow delete`) ends one way,
whether the gateway finds it gone as it follows the child or at its next start: `INTERRUPTED`
(``interrupted by process exit``), as docs/scale-out.md promises, never `FAILED` in one case and
`INTERRUPTED` in the other.
"""

from __future__ import annotations

import asyncio

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest

from agent.models.scripted import ScriptedModel
from lifecycle import PROCESS_EXIT, SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal_launch import no_workflow
from tests.polling import until

S = SubagentState


async def test_a_child_whose_workflow_is_deleted_while_the_gateway_follows_it_is_interrupted(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "never read"}})
    await worker(model)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="deleted under way"))
        await asyncio.wait_for(model.reached("gate"), 10)
        await client.workflow_service.delete_workflow_execution(DeleteWorkflowExecutionRequest(
            namespace=settings.namespace, workflow_execution=WorkflowExecution(workflow_id=handle.subagent_id)))
        await until(lambda: no_workflow(client, handle.subagent_id))
        status = await env.service.wait(handle, timeout_seconds=20)
        result = await env.service.result(handle)
    model.release("gate")
    assert status.state is S.INTERRUPTED, result.error_message
    # As the restart path reports it (test_temporal_launch: deleted while the gateway was down).
    assert (result.state, result.error_message) == (S.INTERRUPTED, PROCESS_EXIT)
    assert len(model.requests) == 1
