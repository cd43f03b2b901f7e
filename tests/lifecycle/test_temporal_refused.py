"""Requests the gateway's Temporal client cannot deliver for a reason other than Temporal being away:
a stop Temporal refuses is said in the log (the child runs on), and a steer the client itself fails to
send is given up there, not left at the head of the child's queue where every later steer waited for good.

The dev server has no authorizer, so it never refuses a cancel for want of permission (PERMISSION_DENIED, an
API key without that right); nor, as of server 1.32, for any other reason our requests can give (a long
reason, a second cancel, the cancel of an ended workflow are all accepted). The refusal here is the dev
server's own answer to a request a client interceptor (the SDK's extension point, not a stand-in for it)
addresses to a run id that is no run id: INVALID_ARGUMENT, handled as any refusal is."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.client import CancelWorkflowInput, Client, Interceptor, OutboundInterceptor
from temporalio.converter import DataConverter, PayloadCodec

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import journaled_steers, steered_echo, until_signalled
from tests.polling import until

S = SubagentState
API_KEY = "sk-never-logged-4f1c"


class _Misaddressed(OutboundInterceptor):
    async def cancel_workflow(self, input: CancelWorkflowInput) -> None:
        input.run_id = "not-a-run-id"
        await super().cancel_workflow(input)


class MisaddressedCancels(Interceptor):
    """Every cancellation goes to a run id that is no run id, which Temporal refuses (INVALID_ARGUMENT)."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Misaddressed(next)


class RefusingCodec(PayloadCodec):
    """Refuses to encode a payload holding ``[unsendable]``, as an encryption codec whose key cannot be had
    does: the client fails the call itself, before anything reaches Temporal, with no `RPCError`."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if any(b"[unsendable]" in payload.data for payload in payloads):
            raise ValueError("the codec refuses this payload")
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


async def test_a_stop_temporal_refuses_is_logged_naming_the_child_and_why(make_env, queue, caplog):
    """A stop Temporal refuses (not that it is away, nor that the child is gone) was dropped with a debug line:
    the child ran on, and nothing said so."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran to its end"}})
    await worker(model)
    refusing = await Client.connect(settings.address, namespace=settings.namespace, api_key=API_KEY, tls=False,
                                    interceptors=[MisaddressedCancels()])
    env = await make_env(engine=TemporalEngine(settings, client=refusing))
    with caplog.at_level(logging.DEBUG, logger="lifecycle.temporal"), env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="stop me"))
        sid = handle.subagent_id
        await asyncio.wait_for(model.reached("gate"), 10)
        assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 1
        [warning] = await until(lambda: [r for r in caplog.records if r.levelno == logging.WARNING])
        model.release("gate")
        await env.service.wait(handle, timeout_seconds=10)
        assert (await env.service.result(handle)).summary == "ran to its end"  # the stop never reached it
    text = warning.getMessage()
    assert sid in text and "refused to stop it" in text and "INVALID_ARGUMENT" in text, text
    assert all(API_KEY not in r.getMessage() for r in caplog.records)


async def test_a_steer_the_client_fails_to_send_is_given_up_and_later_ones_still_reach_the_child(
        make_env, queue, tmp_path, caplog):
    """The steer sender stopped at a failure other than Temporal's answer, its queue left non-empty: every
    later steer was queued behind it, said delivered, and never sent until the gateway restarted."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": steered_echo})
    await worker(model)
    codec = dataclasses.replace(DataConverter.default, payload_codec=RefusingCodec())
    steering = await Client.connect(settings.address, namespace=settings.namespace, data_converter=codec)
    engine = TemporalEngine(settings, client=steering)
    env = await make_env(engine=engine)
    with caplog.at_level(logging.WARNING, logger="lifecycle.temporal"), env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="steer me"))
        sid = handle.subagent_id
        await asyncio.wait_for(model.reached("gate"), 10)
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        assert engine.steer(sid, "[unsendable] first")
        [error] = await until(lambda: [r for r in caplog.records if r.levelno == logging.ERROR])
        assert engine.steer(sid, "second: cite sources")
        await until_signalled(client.get_workflow_handle(sid), 1)
        await until(lambda: journaled_steers(tmp_path / "journal.db", sid) == [])
        model.release("gate")
        assert (await env.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        summary = (await env.service.result(handle)).summary
    assert summary.endswith("second: cite sources") and "[unsendable]" not in summary
    text = error.getMessage()
    assert sid in text and "could not be sent" in text and "the codec refuses" in text, text
