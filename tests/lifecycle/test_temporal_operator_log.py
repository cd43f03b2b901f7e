"""What an operator reads in the logs of a gateway and its workers on Temporal.

A gateway says where its children go as it starts (task queue, namespace, address), as each worker says where it
takes them from: a worker that takes none differs in one of the three, seen at once, not after a child has waited
30 s. A worker that cannot build a child says so in one line naming the child and what to fix (the workspace not
mounted there), not in the Temporal SDK's traceback of the activity's failure, which said the same after fifteen
lines of the SDK's own frames. The child's parent reads the reason as before (test_temporal.py)."""

from __future__ import annotations

import logging
import uuid

from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, ChildOutcome
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import WORKFLOW, ChildLimits, TemporalEngine


async def test_a_child_whose_workspace_is_missing_is_one_line_in_the_workers_log(queue, tmp_path, caplog):
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "never"}}))
    missing = tmp_path / "not-mounted-here"
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="anything", tools=(), workspace=str(missing))
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    with caplog.at_level(logging.DEBUG):
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert outcome.status == "error" and f"the workspace {missing} does not exist on worker" in outcome.error
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.exc_info for r in said] == [None], [(r.name, r.getMessage()) for r in said]
    [line] = said
    assert line.name == "lifecycle.temporal.worker"
    assert job.subagent_id in line.getMessage() and f"the workspace {missing} does not exist" in line.getMessage()


async def test_a_gateway_on_temporal_says_where_its_children_go_as_it_starts(make_env, queue, caplog):
    settings, client, _ = queue
    with caplog.at_level(logging.INFO, logger="lifecycle.temporal"):
        await make_env(engine=TemporalEngine(settings, client=client))
    said = [r.getMessage() for r in caplog.records if r.name == "lifecycle.temporal"]
    assert (f"children run on Temporal: task queue {settings.task_queue} in namespace default at "
            f"{settings.address}; `switchboard worker` on the same configuration runs them") in said, said
