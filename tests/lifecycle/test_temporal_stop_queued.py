"""A child stopped while it waits for a worker ends at once, as a queued in-process child does, and
is never built when a worker comes; one a worker took at the moment of the stop ends as its workflow
says, once."""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import PollWorkflowTaskQueueRequest, RespondWorkflowTaskFailedRequest
from temporalio.client import WorkflowHandle
from temporalio.worker import Replayer

from agent.models.scripted import ScriptedModel
from lifecycle import ChildOutcome, SubagentLaunchRequest, SubagentState
from lifecycle.temporal import ChildWorkflow, TemporalEngine
from tests.lifecycle.test_temporal import crash, exists
from tests.polling import until

S = SubagentState


async def cancelled(env, handle) -> None:
    with env.turn():
        await env.service.cancel(handle, reason="changed my mind")


async def stopped(env, handle) -> None:
    assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 1


STOPS = pytest.mark.parametrize("stop, state, error", [
    (cancelled, S.CANCELLED, "cancelled before start: changed my mind"),
    (stopped, S.INTERRUPTED, "stopped by /stop"),
], ids=["cancel", "interrupt_children"])


async def waiting_for_a_worker(make_env, queue, events, **options):
    """A service on the queue's engine, with no worker yet, and one child whose workflow Temporal has."""
    settings, client, _ = queue
    env = await make_env(engine=TemporalEngine(settings, client=client), **options)
    env.hooks.register("subagent_start", lambda **e: events.append("start"))
    env.hooks.register("subagent_stop", lambda **e: events.append(e["child_status"]))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="never wanted"))
    workflow = client.get_workflow_handle(handle.subagent_id)
    await until(lambda: exists(workflow), 5, every=0.05)
    return env, handle, workflow


async def markers(workflow: WorkflowHandle) -> list[str]:
    """The names of the markers in its history: a local activity's (PREPARE, which builds the child) among them."""
    return [e.marker_recorded_event_attributes.marker_name async for e in workflow.fetch_history_events()
            if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]


@STOPS
async def test_a_child_stopped_while_no_worker_has_taken_it_ends_at_once_and_is_never_built(
        make_env, queue, stop, state, error):
    settings, client, worker = queue
    events = []
    env, handle, workflow = await waiting_for_a_worker(make_env, queue, events)
    await stop(env, handle)
    with env.turn():  # no worker runs: it ends as soon as Temporal holds the stop
        assert (await env.service.wait(handle, timeout_seconds=5)).state is state
        assert (await env.service.result(handle)).error_message == error
    assert events == ["interrupted"]  # a subagent_stop without a subagent_start

    model = ScriptedModel({"leaf": lambda r: {"text": "ran though it was stopped"}})
    await worker(model)
    outcome = ChildOutcome.from_dict(await workflow.result())
    assert (outcome.status, outcome.api_calls) == ("interrupted", 0)
    assert model.requests == [] and "core_local_activity" not in await markers(workflow)
    assert events == ["interrupted"]  # its workflow's end is not reported again
    # The path it took is recorded (a patch): another worker replays it, as one that evicted it from its cache does.
    await Replayer(workflows=[ChildWorkflow]).replay_workflow(await workflow.fetch_history())


@STOPS
async def test_a_child_a_worker_took_as_it_was_stopped_ends_as_its_workflow_says_once(
        make_env, queue, stop, state, error):
    """The worker's first task of the workflow had begun when the stop came: it may be building the child,
    and only its workflow can say how the child ended, which the gateway waits for."""
    settings, client, worker = queue
    events = []
    env, handle, workflow = await waiting_for_a_worker(make_env, queue, events)
    # A worker takes the workflow's first task, and is lost with it before it answers.
    taken = await client.workflow_service.poll_workflow_task_queue(PollWorkflowTaskQueueRequest(
        namespace=settings.namespace, task_queue=TaskQueue(name=settings.task_queue), identity="lost worker"))
    assert taken.workflow_execution.workflow_id == handle.subagent_id
    await stop(env, handle)
    engine = env.service.engine
    await until(lambda: not any(task.get_name() == "temporal-request" for task in engine._tasks))  # the stop is sent
    with env.turn():
        assert not (await env.service.status(handle)).state.terminal

    await client.workflow_service.respond_workflow_task_failed(RespondWorkflowTaskFailedRequest(
        task_token=taken.task_token, namespace=settings.namespace, identity="lost worker",
        cause=WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE))
    model = ScriptedModel({"leaf": lambda r: {"text": "ran though it was stopped"}})
    await worker(model)  # its next attempt reads the stop with the workflow's start: never built
    with env.turn():
        assert (await env.service.wait(handle, timeout_seconds=10)).state is state
        assert (await env.service.result(handle)).error_message == error
    assert model.requests == [] and "core_local_activity" not in await markers(workflow)
    assert events == ["interrupted"]


@STOPS
async def test_a_child_stopped_while_waiting_for_a_worker_ends_at_the_next_start_if_the_gateway_was_killed(
        make_env, queue, stop, state, error):
    """The stop was journaled, and the gateway killed before Temporal had it: the next start asks again as
    it re-attaches the child, and ends it then, with no worker."""
    settings, client, worker = queue
    first, handle, workflow = await waiting_for_a_worker(make_env, queue, [], db="shared.db")
    await stop(first, handle)
    crash(first.service.engine)
    await first.service.journal.sync()

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=5)).state is state
        assert (await second.service.result(handle)).error_message == error
    model = ScriptedModel({"leaf": lambda r: {"text": "ran though it was stopped"}})
    await worker(model)
    assert ChildOutcome.from_dict(await workflow.result()).status == "interrupted"
    assert model.requests == [] and "core_local_activity" not in await markers(workflow)
