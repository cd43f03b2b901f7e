"""Every worker gone while children run (stopped, or crashed): their calls, handed back to Temporal, wait for a
worker that does not come. The gateway's log must say so once, naming the task queue, the namespace and the address,
and say once when a worker polls again; an idle gateway, following no child, says nothing."""

from __future__ import annotations

import asyncio
import time

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from tests.polling import until

S = SubagentState


class Clock:
    """The engine's monotonic clock, moved on by the test past the minute and a half a real watch waits."""

    def __init__(self) -> None:
        self.ahead = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return time.monotonic() + self.ahead

    async def looks(self, count: int) -> None:
        """Until the watch has looked at the pollers ``count`` more times without seeing a new poll."""
        target = self.reads + count
        await until(lambda: self.reads >= target, 10)


def lines(caplog, level: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelname == level and r.getMessage().startswith("lifecycle.temporal.task_queue")]


async def test_workers_gone_mid_run_are_warned_of_once_and_their_return_told_once(make_env, queue, monkeypatch,
                                                                                  caplog):
    settings, client, worker = queue
    monkeypatch.setattr(temporal_engine, "WATCH_SECONDS", 0.01)
    clock = Clock()
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done on the next worker"}})
    running = await worker(model)
    with caplog.at_level("INFO", logger="lifecycle.temporal"):
        env = await make_env(engine=TemporalEngine(settings, client=client, clock=clock),
                             delegation=DelegationSettings(heartbeat_interval_seconds=0.2))
        with env.turn():
            handle = await env.service.launch(SubagentLaunchRequest(goal="orphaned"))
            await asyncio.wait_for(model.reached("gate"), 10)
        # A live worker begins a poll only once a minute while it has nothing new to take: not taken for gone.
        clock.ahead += temporal_engine.LONG_POLL_SECONDS
        await clock.looks(5)
        assert lines(caplog, "WARNING") == []

        await running.__aexit__(None, None, None)  # the only worker
        # Past a long poll and the warning's 30 s, from whenever the worker last began one.
        clock.ahead += temporal_engine.LONG_POLL_SECONDS + temporal_engine.NO_WORKER_WARNING_SECONDS + 1
        await until(lambda: lines(caplog, "WARNING"), 10)
        assert lines(caplog, "INFO") == []

        model.release("gate")
        await worker(model)
        await until(lambda: lines(caplog, "INFO"), 10)
        with env.turn():
            assert (await env.service.wait(handle, timeout_seconds=20)).state is S.SUCCEEDED

    [warning] = lines(caplog, "WARNING")  # once, though the watch looked many times before a worker came
    assert repr(settings.task_queue) in warning and "in namespace 'default'" in warning and settings.address in warning
    assert "while 1 child(ren) wait or run there" in warning
    [back] = lines(caplog, "INFO")
    assert back == (f"lifecycle.temporal.task_queue: a `switchboard worker` polls task queue {settings.task_queue!r}"
                    f" in namespace 'default' at {settings.address} again; the children waiting for one go on")


async def test_a_gateway_following_no_child_does_not_watch_for_workers(make_env, queue, monkeypatch, caplog):
    settings, client, _ = queue  # no worker, by design: nothing to run
    monkeypatch.setattr(temporal_engine, "WATCH_SECONDS", 0.01)
    clock = Clock()
    with caplog.at_level("INFO", logger="lifecycle.temporal"):
        env = await make_env(engine=TemporalEngine(settings, client=client, clock=clock))
        clock.ahead += 3600
        await asyncio.sleep(0.05)
    assert env.service.engine._watch is None and clock.reads == 0
    assert lines(caplog, "WARNING") == []


async def test_children_reattached_after_a_restart_are_watched_and_the_watch_ends_with_the_close(make_env, queue,
                                                                                                monkeypatch, caplog):
    """Review of d3c18a7a: a gateway restarted while its children run, their only worker gone meanwhile, warns as
    one that launched them does; its close leaves no watch behind."""
    settings, client, worker = queue
    monkeypatch.setattr(temporal_engine, "WATCH_SECONDS", 0.01)
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done"}})
    running = await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db",
                           delegation=DelegationSettings(heartbeat_interval_seconds=0.2))
    with first.turn():
        await first.service.launch(SubagentLaunchRequest(goal="outlives its gateway"))
        await asyncio.wait_for(model.reached("gate"), 10)
    await first.service.close()
    await running.__aexit__(None, None, None)
    clock = Clock()
    engine = TemporalEngine(settings, client=client, clock=clock)
    with caplog.at_level("INFO", logger="lifecycle.temporal"):
        second = await make_env(engine=engine, db="shared.db")
        await until(lambda: engine._watch is not None, 10)
        watch = engine._watch
        await clock.looks(2)
        clock.ahead += temporal_engine.LONG_POLL_SECONDS + temporal_engine.NO_WORKER_WARNING_SECONDS + 1
        await until(lambda: lines(caplog, "WARNING"), 10)
        await second.service.close()
    assert watch.done() and engine._watch is None
    [warning] = lines(caplog, "WARNING")
    assert "while 1 child(ren) wait or run there" in warning


async def test_a_describe_temporal_refuses_neither_warns_nor_ends_the_watch(make_env, queue, monkeypatch, caplog):
    """Review of d3c18a7a: an API key without the right to describe the task queue (PERMISSION_DENIED, an
    RPCError) is no worker gone, and the watch goes on asking, quietly."""
    from temporalio.service import RPCError, RPCStatusCode

    settings, client, worker = queue
    monkeypatch.setattr(temporal_engine, "WATCH_SECONDS", 0.01)
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done"}})
    await worker(model)

    async def refused(request, **kwargs):
        raise RPCError("no right to describe", RPCStatusCode.PERMISSION_DENIED, b"")

    monkeypatch.setattr(client.workflow_service, "describe_task_queue", refused)
    clock = Clock()
    engine = TemporalEngine(settings, client=client, clock=clock)
    with caplog.at_level("INFO", logger="lifecycle.temporal"):
        env = await make_env(engine=engine, delegation=DelegationSettings(heartbeat_interval_seconds=0.2))
        with env.turn():
            await env.service.launch(SubagentLaunchRequest(goal="refused"))
            await asyncio.wait_for(model.reached("gate"), 10)
        watch = engine._watch
        for _ in range(3):
            clock.ahead += 3600
            await clock.looks(3)
        assert not watch.done()
        model.release("gate")
        await env.service.close()
    assert watch.done() and (watch.cancelled() or watch.exception() is None)
    assert lines(caplog, "WARNING") == []
