"""The Temporal engine's close keeps to the grace its caller gives: a gateway's stop gives it what is
left of ``server.shutdown_grace_seconds``, not `CLOSE_GRACE_SECONDS` on top of it; within it, what the engine
is reporting to the host (a child's start, its end) is finished, not cut off halfway, and the follows it
stops end at once, not at the end of the grace."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client, Interceptor, OutboundInterceptor, StartWorkflowUpdateInput, WorkflowUpdateHandle
from temporalio.service import RetryConfig

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.test_temporal import exists
from tests.polling import until


async def test_a_close_given_a_grace_sends_for_that_long_not_for_the_engines_own(make_env, tmp_path, monkeypatch):
    """Temporal stopped answering before a launch: the close sends the child's workflow start until the
    grace it is given is spent; the journal keeps the job for the next start (test_temporal_launch.py)."""
    monkeypatch.setattr(temporal_engine, "CLOSE_GRACE_SECONDS", 5.0)
    server = DevServer(log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        env = await make_env(engine=TemporalEngine(settings, client=client))
    finally:
        await asyncio.to_thread(server.stop)
    with env.turn():
        await env.service.launch(SubagentLaunchRequest(goal="launched during an outage"))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await env.service.close(grace=0.3)
    assert loop.time() - began < 2.0  # the grace and the calls it cut short, not the engine's 5 s


async def test_a_close_lets_the_subagent_start_hooks_under_way_finish_then_stops_following(make_env, queue):
    """The gateway stops while a child's `subagent_start` hooks run: the close cut them off halfway, and the next
    start, which reports the child running without starting it, never ran them again. Now they finish within
    the close's grace, and the close returns then, not at the end of the grace."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done"}})
    await worker(model)
    engine = TemporalEngine(settings, client=client)
    env = await make_env(engine=engine)
    entered, leave, ran = asyncio.Event(), asyncio.Event(), []

    async def on_start(**event) -> None:
        entered.set()
        await leave.wait()
        ran.append(event["child_subagent_id"])

    env.hooks.register("subagent_start", on_start)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="starting as the gateway stops"))
    await asyncio.wait_for(entered.wait(), 10)
    closing = asyncio.ensure_future(env.service.close(grace=30.0))
    await until(lambda: engine._closed)  # the close has stopped the follows it stops
    leave.set()
    async with asyncio.timeout(10):  # not the grace: the follow stops once the hooks have run
        await closing
    model.release("gate")  # the child runs on, on its worker
    assert ran == [handle.subagent_id]


class _NotingUpdates(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, sent: asyncio.Event) -> None:
        super().__init__(next)
        self.sent = sent

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> WorkflowUpdateHandle:
        self.sent.set()
        return await super().start_workflow_update(input)


class NotingUpdates(Interceptor):
    """Sets ``sent`` as the client sends a workflow update (the engine's ``running`` update)."""

    def __init__(self) -> None:
        self.sent = asyncio.Event()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _NotingUpdates(next, self.sent)


async def test_a_close_while_a_re_attached_child_waits_for_a_worker_does_not_wait_out_its_grace(make_env, queue):
    """The SDK turns the cancellation of the `running` update, which a re-attached child no worker has taken
    waits on, into an error of its own, which the follow took for a workflow that had ended: it went on
    following, and the close waited the whole grace for it (a gateway's stop, what was left of its own)."""
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="queued"))
    await until(lambda: exists(client.get_workflow_handle(handle.subagent_id)))
    await first.service.close()

    noting = NotingUpdates()
    watched = await Client.connect(settings.address, namespace=settings.namespace, interceptors=[noting])
    second = await make_env(engine=TemporalEngine(settings, client=watched), db="shared.db")
    await asyncio.wait_for(noting.sent.wait(), 10)  # its follow waits for a worker to take the child
    async with asyncio.timeout(10):
        await second.service.close(grace=30.0)
