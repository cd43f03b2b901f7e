"""A steer Temporal refuses (not that it is away, nor that the child ended) is logged as refused, and the
steers after it are still sent: it was logged as the child having ended, and those queued behind it dropped."""

from __future__ import annotations

import asyncio
import logging

from temporalio.client import Client, Interceptor, OutboundInterceptor, SignalWorkflowInput

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import steered_echo, until_signalled
from tests.polling import until

S = SubagentState


class _Misaddressed(OutboundInterceptor):
    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        if "[refused]" in str(input.args):
            input.run_id = "not-a-run-id"
        await super().signal_workflow(input)


class MisaddressedSteers(Interceptor):
    """A steer holding ``[refused]`` goes to a run id that is no run id, which Temporal refuses
    (INVALID_ARGUMENT), as it refuses one an API key may not send (PERMISSION_DENIED); the dev server
    has no authorizer to refuse it so."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Misaddressed(next)


async def test_a_steer_temporal_refuses_is_logged_as_refused_and_later_ones_reach_the_child(make_env, queue, caplog):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": steered_echo})
    await worker(model)
    refusing = await Client.connect(settings.address, namespace=settings.namespace,
                                    interceptors=[MisaddressedSteers()])
    engine = TemporalEngine(settings, client=refusing)
    env = await make_env(engine=engine)
    with caplog.at_level(logging.WARNING, logger="lifecycle.temporal"), env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="steer me"))
        sid = handle.subagent_id
        await asyncio.wait_for(model.reached("gate"), 10)
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        assert engine.steer(sid, "[refused] first")
        assert engine.steer(sid, "second: cite sources")  # queued behind the first
        await until_signalled(client.get_workflow_handle(sid), 1)
        model.release("gate")
        assert (await env.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        summary = (await env.service.result(handle)).summary
    assert summary.endswith("second: cite sources") and "[refused]" not in summary
    texts = [r.getMessage() for r in caplog.records if r.name == "lifecycle.temporal"]
    assert not [t for t in texts if "ended before" in t], texts
    [refused] = [t for t in texts if "refused a steer" in t]
    assert sid in refused and "INVALID_ARGUMENT" in refused and "it is not read" in refused
