"""A gateway restarted while no worker runs: the children it re-attaches to wait for one, and the log must say
why, as it does for children launched with no worker, instead of their staying `waiting for a worker` unexplained."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from tests.lifecycle.test_temporal import exists
from tests.polling import until

S = SubagentState


async def test_children_re_attached_with_no_worker_get_the_warning_naming_the_task_queue(
        make_env, queue, monkeypatch, caplog):
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="queued across a restart"))
    workflow = client.get_workflow_handle(handle.subagent_id)
    await until(lambda: exists(workflow))
    await first.service.close()

    monkeypatch.setattr(temporal_engine, "NO_WORKER_WARNING_SECONDS", 0.2)
    with caplog.at_level("WARNING", logger="lifecycle.temporal"):
        second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
        await until(lambda: caplog.records)

        await worker(ScriptedModel({"leaf": lambda r: {"text": "taken at last"}}))
        with second.turn():
            assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
    # The child's own (it waited that long) or the start's check (no worker polls), whichever came first: once.
    [warning] = [r.getMessage() for r in caplog.records]
    assert repr(settings.task_queue) in warning
    assert "is a `switchboard worker` running" in warning or "no `switchboard worker` polls" in warning
