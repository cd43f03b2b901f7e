"""What the gateway asks of a child on Temporal, besides launching it, when the ask itself is the problem: a stop
whose reason is too big to send, a stop Temporal refuses, a steer handed back at a restart before the child's
workflow has started."""

from __future__ import annotations

import asyncio
import logging
import uuid

from temporalio.client import CancelWorkflowInput, Client, Interceptor, OutboundInterceptor

from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import steered_echo, until_signalled
from tests.lifecycle.test_temporal_launch import Reports
from tests.polling import until

S = SubagentState


async def test_a_stop_whose_reason_is_over_temporals_limits_reaches_the_child_cut_short(make_env, queue):
    """A reason over the 4 MB a gRPC message may hold made every cancel fail as RESOURCE_EXHAUSTED, which reads as
    Temporal being overloaded: it was asked again, backing off, for ever, and the child ran to its end."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran to its end"}})
    await worker(model)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    reason = "stopped: " + "x" * (5 * 2**20)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="stop me"))
        await asyncio.wait_for(model.reached("gate"), 10)
        assert await env.service.host_view().interrupt_child(handle.subagent_id, reason)
        assert (await env.service.wait(handle, timeout_seconds=15)).state is S.INTERRUPTED
        result = await env.service.result(handle)
    assert result.error_message.startswith("stopped: xxx") and result.error_message.endswith("…")
    assert len(result.error_message) == 500


class _RefusedWhileSet(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, refusing: asyncio.Event) -> None:
        super().__init__(next)
        self.refusing = refusing

    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        if self.refusing.is_set():
            input.run_id = "not-a-run-id"  # which Temporal refuses (INVALID_ARGUMENT): see test_temporal_refused.py
        await super().cancel_workflow(input)


class RefusedWhileSet(Interceptor):
    """Temporal refuses every cancellation while ``refusing`` is set, as it does an API key without that right
    until the right is granted."""

    def __init__(self) -> None:
        self.refusing = asyncio.Event()
        self.refusing.set()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _RefusedWhileSet(next, self.refusing)


async def test_a_refused_stop_is_shown_with_the_child_and_a_later_stop_asks_temporal_again(make_env, queue, caplog):
    """The engine kept a refused stop as asked: every later stop of the child was a no-op (only the next start of
    the gateway asked again), and nothing but a log line said that the child ran on."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran to its end"}})
    await worker(model)
    refusal = RefusedWhileSet()
    refusing = await Client.connect(settings.address, namespace=settings.namespace, interceptors=[refusal])
    env = await make_env(engine=TemporalEngine(settings, client=refusing))
    view = env.service.host_view()
    with caplog.at_level(logging.WARNING, logger="lifecycle.temporal"), env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="stop me"))
        await asyncio.wait_for(model.reached("gate"), 10)
        assert await view.interrupt_children("parent-1", "stopped by /stop") == 1
        await until(lambda: [r for r in caplog.records if "refused to stop it" in r.getMessage()])
        [child] = view.children("parent-1")
        assert "Temporal refused to stop it (INVALID_ARGUMENT)" in child.activity, child.activity
        refusal.refusing.clear()  # the right granted: the user stops it again
        assert await view.interrupt_children("parent-1", "stopped by /stop") == 1
        assert (await env.service.wait(handle, timeout_seconds=10)).state is S.INTERRUPTED
        result = await env.service.result(handle)
    assert result.error_message == "stopped by /stop"


async def test_a_steer_handed_back_at_a_restart_before_the_childs_workflow_started_reaches_it(queue):
    """A child the previous process launched but never got to Temporal is started by the next start, which hands
    back the steers it had not sent: the engine signalled them before the workflow's start was answered, on a
    handle it did not have yet, and logged them as not read."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": steered_echo})
    await worker(model)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="steer me", tools=("list_files",), workspace="/tmp")
    engine, host = TemporalEngine(settings, client=client), Reports()
    assert await engine.start(host, {job.subagent_id: job}) == [job]  # no workflow yet: started now
    engine.steer_again(job.subagent_id, [{"id": "s1", "text": "use metric units"}])
    await asyncio.wait_for(model.reached("gate"), 10)
    await until_signalled(client.get_workflow_handle(job.subagent_id), 1)
    model.release("gate")
    async with asyncio.timeout(20):
        outcome = await host.outcome(job.subagent_id)
    await engine.close()
    assert outcome.summary.endswith("use metric units") and outcome.summary.count("use metric units") == 1
