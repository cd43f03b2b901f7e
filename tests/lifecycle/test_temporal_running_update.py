"""How a re-attached child that no worker had taken is reported once one takes it: its ``running`` update,
asked while Temporal did not answer, is asked again, not given up, which left the child PENDING, `waiting for
a worker`, with every steer refused as to a child not running, until it ended."""

from __future__ import annotations

import asyncio
import logging

from temporalio.client import Client, Interceptor, OutboundInterceptor, StartWorkflowUpdateInput
from temporalio.service import RPCError, RPCStatusCode

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import exists
from tests.polling import until

S = SubagentState


class _Unanswered(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, times: list[int]) -> None:
        super().__init__(next)
        self._times = times

    async def start_workflow_update(self, input: StartWorkflowUpdateInput):
        if self._times[0] > 0:
            self._times[0] -= 1
            raise RPCError("transport error", RPCStatusCode.UNAVAILABLE, b"")
        return await super().start_workflow_update(input)


class UnansweredUpdates(Interceptor):
    """The first ``times`` updates fail as the client's call fails once its retries are spent while
    Temporal is down (UNAVAILABLE): an outage that lands just as the child is re-attached."""

    def __init__(self, times: int) -> None:
        self.times = [times]

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Unanswered(next, self.times)


async def test_a_re_attached_childs_running_update_unanswered_is_asked_again(make_env, queue, caplog):
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="queued"))
    sid = handle.subagent_id
    await until(lambda: exists(client.get_workflow_handle(sid)))
    await first.service.close()

    outage = UnansweredUpdates(1)
    flaky = await Client.connect(settings.address, namespace=settings.namespace, interceptors=[outage])
    engine = TemporalEngine(settings, client=flaky)
    with caplog.at_level(logging.WARNING, logger="lifecycle.temporal"):
        second = await make_env(engine=engine, db="shared.db")
        model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran later"}})
        await worker(model)
        await asyncio.wait_for(model.reached("gate"), 10)
        [child] = await until(lambda: [c for c in second.service.host_view().children("parent-1")
                                       if c.state is S.RUNNING])
        assert outage.times == [0]
        assert engine.activity(sid) != "waiting for a worker"
        assert engine.steer(sid, "also this")  # a running child takes steers
        model.release("gate")
        with second.turn():
            assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
    assert any("does not answer" in r.getMessage() and sid in r.getMessage() for r in caplog.records)
