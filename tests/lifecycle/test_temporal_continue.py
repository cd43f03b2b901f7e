"""A long child continues as new before its workflow's history nears Temporal's limits, and goes on
as if it had not: the same id, result and usage, and stops and steers sent around each switch.

The workflow's bound is lowered (a test-only knob) so that a child of a dozen steps switches runs
every step or two, against the real dev server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, ChildOutcome, SubagentLaunchRequest, SubagentState
from lifecycle.temporal import WORKFLOW, ChildLimits, TemporalEngine
from lifecycle.temporal import _workflow as temporal_workflow
from lifecycle.temporal._wire import PAYLOAD_LIMIT_BYTES, STEER
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.conftest import FakeClock, make_registry
from tests.lifecycle.test_temporal import discard

STEPS = 12
"""Model calls with a tool call each before the answer."""


@pytest.fixture(scope="module")
def temporal_server(tmp_path_factory):
    """A dev server of this module's own that starts a continued run at once: Temporal holds back the run
    after one shorter than ``history.workflowIdReuseMinimalInterval`` (1 s) for the rest of that second,
    ~0.9 s a switch here, where a child's runs last far longer than a second."""
    server = DevServer(log_file=tmp_path_factory.mktemp("temporal") / "server.log",
                       dynamic_config=('history.workflowIdReuseMinimalInterval="0s"',)).start()
    yield server
    discard(server)


@pytest.fixture(autouse=True)
def continue_early(monkeypatch):
    # About two steps of history (a model call and a tool call are six events each).
    monkeypatch.setattr(temporal_workflow, "_CONTINUE_AFTER_EVENTS", 20)


async def runs(client: Client, workflow_id: str) -> int:
    """How many runs the workflow took: the first, and one for each time it continued as new."""
    count, run_id = 0, None
    while True:
        count += 1
        async for event in client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history_events():
            run_id = event.workflow_execution_started_event_attributes.continued_execution_run_id
            break
        if not run_id:
            return count


def notes(request: ModelRequest) -> list[str]:
    """The steered lines the child's conversation holds, in order."""
    lines = []
    for message in request.messages:
        content = str(message.get("content") or "")
        if "while you were working]" in content:
            lines += content.split("while you were working]\n", 1)[1].splitlines()
    return lines


async def test_a_long_child_continues_as_new_and_ends_with_its_result_and_usage(make_env, queue):
    settings, client, worker = queue

    def leaf(request: ModelRequest) -> dict:
        if request.iteration < STEPS:
            return {"text": f"step {request.iteration}", "tool_calls": [{"name": "list_files"}], "cost_usd": 0.25}
        return {"text": f"done after {len(request.messages)} messages", "cost_usd": 0.25}

    model = ScriptedModel({"leaf": leaf})
    await worker(model)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="research at length"))
        assert (await env.service.wait(handle, timeout_seconds=30)).state is SubagentState.SUCCEEDED
        result = await env.service.result(handle)
    assert await runs(client, handle.subagent_id) >= 3  # it continued as new twice at least
    # The whole conversation went on across the switches: system, goal, a call and its result per step, …
    assert result.summary == f"done after {2 + 2 * STEPS} messages"
    assert [r.iteration for r in model.requests] == list(range(STEPS + 1))  # no step asked twice
    usage = result.usage
    assert (usage.api_calls, usage.prompt_tokens, usage.completion_tokens) == (STEPS + 1, 10 * (STEPS + 1),
                                                                              5 * (STEPS + 1))
    assert usage.cost_usd == pytest.approx(0.25 * (STEPS + 1))


def child_job(goal: str) -> dict:
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t", goal=goal,
                   tools=("list_files",), workspace="/tmp")
    return {"job": job.to_dict(), "limits": ChildLimits().to_dict()}


async def test_steers_sent_while_the_child_switches_runs_are_each_read_once_in_order(queue):
    """Steers sent one after another the whole time the child runs, through many switches: each
    Temporal took is read once, in order, but for the last few that came after its last step; one
    sent again under its id (its answer lost) after a switch is not read twice."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"tool_calls": [{"name": "list_files"}]} if r.iteration < STEPS
                           else {"text": "\n".join(notes(r))}})
    await worker(model)
    wire = child_job("steered at length")
    workflow = await client.start_workflow(WORKFLOW, wire, id=wire["job"]["subagent_id"],
                                           task_queue=settings.task_queue)
    sent = []

    async def steer_all_along() -> None:
        with contextlib.suppress(RPCError):  # until it has ended
            for n in range(10_000):
                await workflow.signal(STEER, {"id": f"s{n}", "text": f"note {n}"})
                sent.append(f"note {n}")
                if n % 5 == 4:  # and again, as the gateway sends one whose answer was lost
                    await workflow.signal(STEER, {"id": f"s{n}", "text": f"note {n}"})

    steering = asyncio.ensure_future(steer_all_along())
    async with asyncio.timeout(60):
        outcome = ChildOutcome.from_dict(await workflow.result())
        await steering
    read = outcome.summary.splitlines()
    assert await runs(client, workflow.id) >= 3
    assert len(read) >= 2 and read == sent[:len(read)]  # none lost, none twice, in order


async def test_a_stop_sent_as_the_child_switches_runs_stops_it_with_what_it_had_spent(queue):
    """The stop comes as the child's call ends and it continues as new: before the switch, while it
    is under way or in the new run, the child stops as interrupted with its partial output and all it
    spent, in every run, instead of running on to its end or failing."""
    settings, client, worker = queue
    gate = 2 * STEPS // 3

    def leaf(request: ModelRequest) -> dict:
        step = {"text": f"step {request.iteration}", "tool_calls": [{"name": "list_files"}]}
        return {**step, "wait": "gate"} if request.iteration == gate else step

    model = ScriptedModel({"leaf": leaf})
    await worker(model)
    wire = child_job("stopped at length")
    workflow = await client.start_workflow(WORKFLOW, wire, id=wire["job"]["subagent_id"],
                                           task_queue=settings.task_queue)
    await asyncio.wait_for(model.reached("gate"), 20)
    assert await runs(client, workflow.id) >= 3
    model.release("gate")
    await workflow.cancel(reason="stopped by /stop")
    async with asyncio.timeout(20):
        outcome = ChildOutcome.from_dict(await workflow.result())
    assert outcome.status == "interrupted" and outcome.error == "stopped by /stop"
    calls = outcome.api_calls
    assert calls in (gate, gate + 1, gate + 2)  # the gated call, and the one after it, may have answered
    assert outcome.summary == f"step {calls - 1}"
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (10 * calls, 5 * calls)
    assert len(outcome.tool_trace) in (calls - 1, calls)


async def test_a_child_whose_state_would_not_fit_in_one_payload_goes_on_without_continuing(queue, monkeypatch,
                                                                                         caplog):
    """The conversation fits in a model call, the state to carry (the job's context once more) does not:
    continued as new, the workflow task would fail for ever (its input over Temporal's payload limit)
    and the child wait; it goes on in the run it has instead, saying why."""
    monkeypatch.setattr(temporal_workflow, "_CONTINUE_AFTER_EVENTS", 10)
    settings, client, worker = queue
    tools = make_registry()
    # A model call carries the output and 81 kB more (the goal twice, in a message and the metadata, the context
    # in the system prompt); the state 33 kB more again (the job's context): the call is 16 kB under the limit
    # (less Temporal's envelope), the state 16 kB over.
    output = PAYLOAD_LIMIT_BYTES - 98_000
    tools.add("bulky", "big output", {"type": "object"}, lambda args, ctx: "x" * output, toolset="file")
    model = ScriptedModel({"leaf": lambda r: {"tool_calls": [{"name": "bulky"}]} if r.iteration == 0
                           else {"text": f"read {len(r.messages[-1]['content'])} characters"}})
    await worker(model, tools)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="g" * 16_000, context="c" * 32_000, tools=("bulky",), workspace="/tmp")
    with caplog.at_level("WARNING"):
        async with asyncio.timeout(30):
            body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": ChildLimits().to_dict()},
                                                 id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert outcome.status == "completed" and outcome.summary == f"read {output} characters"
    assert await runs(client, job.subagent_id) == 1
    assert any(f"child {job.subagent_id} cannot continue as new: the child's state (2.0 MB) is over Temporal's"
               " payload limit" in r.getMessage() for r in caplog.records)


async def test_a_gateway_restarted_after_the_child_continued_as_new_follows_it_to_its_result(make_env, queue):
    settings, client, worker = queue
    gate = STEPS // 2

    def leaf(request: ModelRequest) -> dict:
        if request.iteration < STEPS:
            step = {"text": f"step {request.iteration}", "tool_calls": [{"name": "list_files"}]}
            return {**step, "wait": "gate"} if request.iteration == gate else step
        return {"text": f"done after {len(request.messages)} messages"}

    model = ScriptedModel({"leaf": leaf})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    began = time.time()
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="research at length"))
        await asyncio.wait_for(model.reached("gate"), 20)
    called = time.time()
    assert await runs(client, handle.subagent_id) >= 3
    await first.service.close()

    clock = FakeClock()
    clock.advance(1000)  # a start time made up at the restart would show
    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db", clock=clock)
    [child] = second.service.host_view().children("parent-1")
    # Running since its first run began (its latest run's start carries when), not since the restart.
    assert child.state is SubagentState.RUNNING and began - 1 <= child.started_at <= called
    model.release("gate")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=30)).state is SubagentState.SUCCEEDED
        result = await second.service.result(handle)
    assert result.summary == f"done after {2 + 2 * STEPS} messages" and result.usage.api_calls == STEPS + 1
