"""A gateway whose task queue (or namespace) no worker polls — a typo on either side — says so soon after it starts,
naming the setting, instead of only once a child has waited for a worker (the first delegation, maybe hours later)."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from tests.polling import until


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("lifecycle.temporal.task_queue")]


async def test_a_task_queue_no_worker_polls_is_warned_of_at_start_naming_the_setting(make_env, queue, monkeypatch,
                                                                                     caplog):
    settings, client, worker = queue
    await worker(ScriptedModel({}))  # a worker, on the queue the gateway's settings do not name
    typo = type(settings)(address=settings.address, task_queue=f"{settings.task_queue}-typo")
    monkeypatch.setattr(temporal_engine, "NO_WORKER_WARNING_SECONDS", 0.2)
    with caplog.at_level("WARNING", logger="lifecycle.temporal"):
        await make_env(engine=TemporalEngine(typo, client=client))  # no child launched
        await until(lambda: warnings(caplog), 10, every=0.05)
    [warning] = warnings(caplog)
    assert repr(typo.task_queue) in warning and "in namespace 'default'" in warning and settings.address in warning


async def test_a_task_queue_a_worker_polls_gets_no_warning(make_env, queue, monkeypatch, caplog):
    settings, client, worker = queue
    await worker(ScriptedModel({}))
    monkeypatch.setattr(temporal_engine, "NO_WORKER_WARNING_SECONDS", 0.2)
    with caplog.at_level("DEBUG", logger="lifecycle.temporal"):
        env = await make_env(engine=TemporalEngine(settings, client=client))
        check = next(t for t in env.service.engine._tasks if t.get_name() == "temporal-describe")
        await asyncio.wait_for(check, 10)
    assert warnings(caplog) == []
