"""Graceful stops with scale-out, as a deploy or `systemctl restart` makes them: a worker SIGTERMed
while its child's model call runs leaves the call to another worker, and a gateway SIGTERMed while a
child runs on a worker interrupts no child; either way the chat gets the child's result exactly once
(docs/scale-out.md). The SIGKILLed cases are in test_scale_out.py, whose fixtures these share."""

from __future__ import annotations

import asyncio

import pytest

from lifecycle import ChildOutcome
from tests.scenarios.test_scale_out import RESULTS, cluster, pid_of, texts  # noqa: F401 - cluster is a fixture

pytestmark = pytest.mark.timeout(120)

ONE_SLOW_STEP = {"provider": "demo", "demo": {"child_steps": 1, "step_seconds": 4}}
"""The child's one model call outlasts a signal sent once it has begun; 4 s, not the 1 s of the kill
tests: it must still run as a graceful stop (no grace: `server.shutdown_grace_seconds` is 0) ends."""


async def test_a_worker_sigtermed_mid_child_leaves_its_call_to_another_and_the_chat_gets_one_completion(
        cluster):  # noqa: F811
    receiver = cluster.receiver
    scale = cluster(model=ONE_SLOW_STEP)
    await scale.start(workers=2)
    await scale.say("w", "- gamma review")
    [(child, identity)] = await scale.until_running(1)
    victim = next(w for w in scale.workers if w.proc.pid == pid_of(identity))
    async with asyncio.timeout(10):  # its grace (none) and a second, with slack for a loaded machine
        assert await victim.stop() == 0

    await receiver.wait_for(lambda: any(RESULTS in t for t in texts(receiver, "w")), timeout=60)
    workflow = scale.client.get_workflow_handle(child)
    outcome = ChildOutcome.from_dict(await workflow.result())
    assert outcome.status == "completed" and "gamma review" in outcome.summary
    # Cut off, not finished there: Temporal records the start of a call's last attempt only
    [started] = [e.activity_task_started_event_attributes async for e in workflow.fetch_history_events()
                 if e.HasField("activity_task_started_event_attributes")]
    assert started.attempt == 2 and started.identity != identity
    assert await scale.gateway.stop() == 0
    completions = [t for t in texts(receiver, "w") if RESULTS in t]
    assert len(completions) == 1 and "gamma review: completed" in completions[0]


async def test_a_gateway_sigtermed_while_a_child_runs_on_a_worker_delivers_its_result_once_after_the_restart(
        cluster):  # noqa: F811
    receiver = cluster.receiver
    scale = cluster(model=ONE_SLOW_STEP)
    await scale.start(workers=1)
    await scale.say("g", "- delta audit")
    [(child, _)] = await scale.until_running(1)
    assert await scale.gateway.stop() == 0  # graceful: as in-process it would interrupt the child

    await scale.start_gateway()
    await receiver.wait_for(lambda: any(RESULTS in t for t in texts(receiver, "g")), timeout=60)
    outcome = ChildOutcome.from_dict(await scale.client.get_workflow_handle(child).result())
    assert outcome.status == "completed" and outcome.api_calls == 1  # its one call ran once, not again
    assert await scale.gateway.stop() == 0
    said = texts(receiver, "g")
    completions = [t for t in said if RESULTS in t]
    assert len(completions) == 1 and "delta audit: completed" in completions[0], said
    assert not any("interrupted" in t.lower() for t in said), said
