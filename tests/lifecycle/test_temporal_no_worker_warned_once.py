"""A gateway restarted while its children run and no worker polls says so once: the start's check warns
`NO_WORKER_WARNING_SECONDS` after the start, and the watch of the re-attached children, finding no poll a long
poll later, said it again of the same condition. A worker polling again is still told, once, at INFO."""

from __future__ import annotations

import asyncio
import time

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from tests.lifecycle.test_temporal_workers_gone_mid_run import Clock, lines
from tests.polling import until

S = SubagentState


async def test_a_restart_with_running_children_and_no_worker_warns_once_and_tells_the_return(
        make_env, queue, monkeypatch, caplog):
    settings, client, worker = queue
    monkeypatch.setattr(temporal_engine, "WATCH_SECONDS", 0.01)
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done on the next worker"}})
    running = await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db",
                           delegation=DelegationSettings(heartbeat_interval_seconds=0.2))
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="outlives its gateway"))
        await asyncio.wait_for(model.reached("gate"), 10)
    await first.service.close()
    await running.__aexit__(None, None, None)
    # Temporal lists a gone worker's pollers for minutes: the restart is taken as one after they were forgotten.
    gone = time.time()
    describe = client.workflow_service.describe_task_queue
    looks = []

    async def forgotten(request, **kwargs):
        looks.append(request)
        answer = await describe(request, **kwargs)
        kept = [p for p in answer.pollers if p.last_access_time.ToNanoseconds() / 1e9 > gone]
        del answer.pollers[:]
        answer.pollers.extend(kept)
        return answer

    monkeypatch.setattr(client.workflow_service, "describe_task_queue", forgotten)
    monkeypatch.setattr(temporal_engine, "NO_WORKER_WARNING_SECONDS", 0.2)
    clock = Clock()
    engine = TemporalEngine(settings, client=client, clock=clock)
    with caplog.at_level("INFO", logger="lifecycle.temporal"):
        second = await make_env(engine=engine, db="shared.db")
        await until(lambda: lines(caplog, "WARNING"), 10, every=0.05)  # the start's check
        await until(lambda: engine._watch is not None, 10)
        await until(lambda: len(looks) >= 3, 10)  # the check's look, and the watch's
        clock.ahead += temporal_engine.LONG_POLL_SECONDS + temporal_engine.NO_WORKER_WARNING_SECONDS + 1
        seen = len(looks)
        await until(lambda: len(looks) >= seen + 5, 10)  # the watch looked again, past the quiet it warns of
        assert len(lines(caplog, "WARNING")) == 1, lines(caplog, "WARNING")

        model.release("gate")
        await worker(model)
        await until(lambda: lines(caplog, "INFO"), 10)
        with second.turn():
            assert (await second.service.wait(handle, timeout_seconds=20)).state is S.SUCCEEDED
    [warning] = lines(caplog, "WARNING")
    assert "after this gateway started" in warning and repr(settings.task_queue) in warning
    [back] = lines(caplog, "INFO")
    assert back.endswith("again; the children waiting for one go on")
