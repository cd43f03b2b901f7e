"""A launch committed to the journal gets its child's workflow started, however the gateway stops.

`launch` returns once the child is journaled; the engine starts its workflow just after. A gateway
that closes, or is killed, in between must not lose the child (on Temporal a restart interrupts no
child), and no start, sent again, may run a child twice. Two launches are not started: one asked to
stop first, which ends as a stopped child that never ran, and an inline delegate_task's, whose waiting
turn died with the gateway (the gateway runs that turn again, delegating anew); such a child whose
workflow Temporal already had is stopped at the restart, not followed on for no one.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import uuid

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RetryConfig, RPCError, RPCStatusCode

from agent import ToolContext
from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, ChildOutcome, SubagentHandle, SubagentLaunchRequest, SubagentState, delegate_tool
from lifecycle.settings import DelegationSettings, TemporalSettings
from lifecycle.temporal import WORKFLOW, ChildLimits, ChildWorker, TemporalEngine, WorkerToolbox
from lifecycle.temporal import _engine as temporal_engine
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.conftest import make_registry
from tests.lifecycle.test_temporal import crash, discard
from tests.polling import until

S = SubagentState


async def no_workflow(client: Client, subagent_id: str) -> bool:
    try:
        await client.get_workflow_handle(subagent_id).describe()
    except RPCError as exc:
        return exc.status is RPCStatusCode.NOT_FOUND
    return False


async def test_a_child_launched_just_before_the_service_closes_runs_while_it_is_down(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran while the gateway was down"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="launched at the last moment"))
    # At once, with nothing awaited in between: the engine's task that starts the workflow has not run.
    await first.service.close()
    # The close started it: the child runs on its worker while no gateway follows it.
    async with asyncio.timeout(10):
        body = await client.get_workflow_handle(handle.subagent_id).result()
    assert ChildOutcome.from_dict(body).summary == "ran while the gateway was down"

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "ran while the gateway was down"
    assert len(model.requests) == 1


async def test_a_child_whose_gateway_was_killed_before_its_workflow_started_runs_after_the_restart(make_env, queue):
    """A SIGKILL between the launch's commit and the workflow's start: the journal has the launch,
    Temporal nothing. The next start starts the child instead of calling it interrupted."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran after the restart"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="launched, then killed"))
    crash(first.service.engine)
    assert await no_workflow(client, handle.subagent_id)

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    stops = []
    second.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "ran after the restart"
    assert stops == ["completed"] and len(model.requests) == 1


async def test_a_child_whose_workflow_was_deleted_while_the_gateway_was_down_is_not_started_again(make_env, queue):
    """Temporal no longer has the child's workflow (an operator deleted it, or it ended longer ago than
    the namespace keeps histories): a child whose workflow Temporal once had is not taken for a launch
    never started, and run a second time."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran twice"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="runs once"))
        await asyncio.wait_for(model.reached("gate"), 10)
    await first.service.close()
    await client.workflow_service.delete_workflow_execution(DeleteWorkflowExecutionRequest(
        namespace=settings.namespace, workflow_execution=WorkflowExecution(workflow_id=handle.subagent_id)))
    await until(lambda: no_workflow(client, handle.subagent_id))

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        result = await second.service.result(handle)
    model.release("gate")
    assert (result.state, result.error_message) == (S.INTERRUPTED, "interrupted by process exit")
    assert len(model.requests) == 1


async def test_a_child_whose_workflow_temporal_did_not_take_before_the_close_ends_runs_after_the_next_start(
        make_env, tmp_path, monkeypatch):
    """Temporal is down from before the launch until after the gateway has stopped: the close gives the
    start a bounded grace, then leaves the child to the next start, which starts it."""
    monkeypatch.setattr(temporal_engine, "CLOSE_GRACE_SECONDS", 0.5)
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
        await asyncio.to_thread(server.stop)
        with first.turn():
            handle = await first.service.launch(SubagentLaunchRequest(goal="launched during an outage"))
        loop = asyncio.get_running_loop()
        began = loop.time()
        await first.service.close()
        assert loop.time() - began < 5  # the grace, and the calls it cut short, not the outage
        await asyncio.to_thread(server.start)

        model = ScriptedModel({"leaf": lambda r: {"text": "ran once Temporal was back"}})
        toolbox = WorkerToolbox(tools=make_registry(), model_for=lambda provider, name: model)
        async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
            second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
            with second.turn():
                assert (await second.service.wait(handle, timeout_seconds=20)).state is S.SUCCEEDED
                assert (await second.service.result(handle)).summary == "ran once Temporal was back"
    finally:
        await asyncio.to_thread(discard, server)


class Reports:
    """The `EngineHost` of an engine driven directly: what it reported."""

    delegation = DelegationSettings(heartbeat_interval_seconds=0.2)

    def __init__(self) -> None:
        self.placed_ids: list[str] = []
        self.outcomes: dict[str, asyncio.Future[ChildOutcome]] = {}

    def outcome(self, subagent_id: str) -> asyncio.Future[ChildOutcome]:
        return self.outcomes.setdefault(subagent_id, asyncio.get_running_loop().create_future())

    async def starting(self, subagent_id: str) -> None:
        pass

    def running(self, subagent_id: str) -> None:
        pass

    def placed(self, subagent_id: str) -> None:
        self.placed_ids.append(subagent_id)

    def unsent_steers(self, subagent_id, steers) -> None:
        pass

    async def finished(self, subagent_id: str, outcome: ChildOutcome) -> None:
        self.outcome(subagent_id).set_result(outcome)


async def ended_child(queue) -> tuple[ChildJob, str]:
    """A child whose workflow ran, and ended, before the engine sends its start: its job and its run."""
    settings, client, _ = queue
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="once", workspace="/tmp")
    workflow = await client.start_workflow(WORKFLOW, {"job": job.to_dict(), "limits": ChildLimits().to_dict()},
                                           id=job.subagent_id, task_queue=settings.task_queue)
    async with asyncio.timeout(10):
        await workflow.result()
    return job, workflow.result_run_id


async def test_a_start_sent_again_after_the_child_ended_never_runs_it_twice(queue, caplog):
    """A start whose answer was lost is sent again; the child may have ended meanwhile. Its workflow id
    is the child's, and the start that follows must report that run's outcome, not start another."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran once"}})
    await worker(model)
    followed, run = await ended_child(queue)
    closed, closed_run = await ended_child(queue)
    engine, host = TemporalEngine(settings, client=client), Reports()
    await engine.start(host, {})
    engine.submit(followed)
    async with asyncio.timeout(10):
        assert (await host.outcome(followed.subagent_id)).summary == "ran once"
    engine.submit(closed)
    await engine.close()  # before its follow ran: the close sends the start
    assert host.placed_ids == [followed.subagent_id, closed.subagent_id]
    assert (await client.get_workflow_handle(followed.subagent_id).describe()).run_id == run
    assert (await client.get_workflow_handle(closed.subagent_id).describe()).run_id == closed_run
    assert len(model.requests) == 2  # one for each child
    gc.collect()  # the SDK's copy of the refused start's error, read or not, is let go
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_a_child_found_at_the_restart_whose_row_kept_its_job_has_it_forgotten(make_env, queue):
    """Killed after Temporal took the workflow, before the row that forgets the job was committed: the
    next start re-attaches to the child, and the engine's report that it found it came before the
    service held its record, so the job stayed kept; a later start that no longer found the workflow
    (deleted, or past the namespace's retention) would have run the child a second time."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran once"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    first.service._supervisor.placed = lambda subagent_id: None  # its row never committed
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="found at the restart"))
        await asyncio.wait_for(model.reached("gate"), 10)
    crash(first.service.engine)
    await first.service.journal.sync()
    assert (await first.service.journal.get(handle.subagent_id)).job is not None

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    await second.service.journal.sync()
    assert (await second.service.journal.get(handle.subagent_id)).job is None
    model.release("gate")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
    assert len(model.requests) == 1


class KilledAtSubmit(TemporalEngine):
    """A gateway SIGKILLed just after it queued a child, before the start of its workflow left."""

    def submit(self, job: ChildJob) -> None:
        super().submit(job)
        crash(self)


async def test_an_inline_child_whose_gateway_was_killed_before_its_workflow_started_is_not_started_again(
        make_env, queue):
    """An inline delegate_task's turn waits for its children and dies with the process; the gateway
    runs that turn again from its inbox, and it delegates anew. The child of the first run, which
    Temporal never had, is not started by the next start: its result would reach no one and its
    work would be done twice. It ends INTERRUPTED, as it did before the journal kept jobs."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran for no one"}})
    await worker(model)
    first = await make_env(engine=KilledAtSubmit(settings, client=client), db="shared.db", delegate=True)
    tool = delegate_tool(first.service)
    call = asyncio.ensure_future(tool.invoke({"goal": "inline work"}, ToolContext(
        first.parent, "call-1", first.parent.workspace, {}, "turn-1")))
    (record,) = await until(lambda: first.service._supervisor.children("parent-1"))
    call.cancel()  # the turn goes with the process
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await first.service.journal.sync()  # its PENDING row was committed with a later batch
    handle = record.handle

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        await second.service.wait(handle, timeout_seconds=10)
        result = await second.service.result(handle)
    assert (result.state, result.error_message) == (S.INTERRUPTED, "interrupted by process exit")
    assert await no_workflow(client, handle.subagent_id)
    assert model.requests == []


async def stopped_then_killed(make_env, queue, stop) -> tuple[SubagentHandle, ScriptedModel]:
    """A child launched, then asked to stop (``stop(env, handle)``) before its workflow's start left,
    and the gateway SIGKILLed after the stop was journaled."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran though it was stopped"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="stopped at once"))
        # Nothing awaited in between: the engine's start has not left. Killed before any of its requests has
        # run, a cancel too, which answers once its stop is committed: its first step only, up to that wait.
        stopping = stop(first, handle)
        with contextlib.suppress(StopIteration):
            stopping.send(None)
    crash(first.service.engine)
    stopping.close()  # killed: no answer
    await first.service.journal.sync()  # the row keeping the stop
    assert await no_workflow(client, handle.subagent_id)
    return handle, model


async def cancelled(env, handle) -> None:
    assert (await env.service.cancel(handle, reason="changed my mind")).state is S.CANCEL_REQUESTED


async def stopped(env, handle) -> None:
    assert await env.service.host_view().interrupt_child(handle.subagent_id, "stopped by /stop")


@pytest.mark.parametrize("stop, state, error", [
    (cancelled, S.CANCELLED, "cancelled before start: changed my mind"),
    (stopped, S.INTERRUPTED, "stopped by /stop"),
])
async def test_a_child_stopped_before_its_workflow_started_is_never_started_after_a_kill(
        make_env, queue, stop, state, error):
    """The journal kept the child's job and its stop: the next start does not start it only to cancel
    it (a worker could take it first and call the model); it ends as a child stopped before it ran."""
    settings, client, _ = queue
    handle, model = await stopped_then_killed(make_env, queue, stop)

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is state
        result = await second.service.result(handle)
    assert (result.state, result.error_message) == (state, error)
    assert await no_workflow(client, handle.subagent_id)
    assert model.requests == []
    await second.service.journal.sync()
    assert (await second.service.journal.get(handle.subagent_id)).job is None


@pytest.mark.parametrize("stop, state, error", [
    (cancelled, S.CANCELLED, "cancelled before start: changed my mind"),
    (stopped, S.INTERRUPTED, "stopped by /stop"),
])
async def test_a_child_stopped_before_its_workflows_start_was_sent_is_never_started(
        make_env, queue, stop, state, error):
    """Stopped with its launch, before the engine sent the start of its workflow: the engine does not
    start it only to cancel it (a worker could take it first and call the model); it ends as a child
    stopped before it ran ends in-process."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"text": "ran though it was stopped"}})
    await worker(model)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="stopped at once"))
        await stop(env, handle)  # nothing awaited in between: the engine's start has not left
        assert (await env.service.wait(handle, timeout_seconds=10)).state is state
        result = await env.service.result(handle)
    assert (result.state, result.error_message) == (state, error)
    assert await no_workflow(client, handle.subagent_id)
    assert model.requests == []


@pytest.mark.parametrize("stop, error", [
    (None, "interrupted by process exit"),
    ("stopped by /stop", "stopped by /stop"),  # asked first, by the user: its reason stands
], ids=["running", "stopped"])
async def test_an_inline_child_temporal_had_when_its_gateway_was_killed_is_stopped_at_the_restart(
        make_env, queue, stop, error):
    """An inline delegate_task's child whose workflow Temporal had: its waiting turn died with the gateway,
    which runs that turn again and delegates anew. Followed on, the child would run to its end for no one,
    its work done twice; the next start asks Temporal to stop it (its worker stops calling the model) and
    it ends as a graceful stop ends it, INTERRUPTED by process exit; or, when a stop was asked of it before
    the kill (journaled, its request not sent), with that stop's reason."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "ran for no one"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db", delegate=True)
    tool = delegate_tool(first.service)
    call = asyncio.ensure_future(tool.invoke({"goal": "inline work"}, ToolContext(
        first.parent, "call-1", first.parent.workspace, {}, "turn-1")))
    (record,) = await until(lambda: first.service._supervisor.children("parent-1"))
    await asyncio.wait_for(model.reached("gate"), 10)  # its worker is in its model call
    if stop is not None:
        assert await first.service.host_view().interrupt_child(record.handle.subagent_id, stop)
    crash(first.service.engine)  # nothing awaited since the stop: its request has not left
    call.cancel()  # the turn goes with the process
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await first.service.journal.sync()
    handle = record.handle
    assert (await first.service.journal.get(handle.subagent_id)).inline

    try:
        second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
        with second.turn():
            assert (await second.service.wait(handle, timeout_seconds=10)).state is S.INTERRUPTED
            result = await second.service.result(handle)
        assert (result.state, result.error_message) == (S.INTERRUPTED, error)
        description = await client.get_workflow_handle(handle.subagent_id).describe()
        assert description.status is not WorkflowExecutionStatus.RUNNING
        assert len(model.requests) == 1
    finally:
        model.release("gate")


async def test_a_child_stopped_while_temporal_did_not_answer_its_start_is_never_started(
        make_env, tmp_path, monkeypatch, caplog):
    """Temporal is down when the child is launched, and it is cancelled before Temporal is back: the
    engine, trying the start again, does not start it only for the cancel, waiting out the outage too, to
    stop it (a worker could build it first and call the model); it ends as a child cancelled before it ran."""
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        engine = TemporalEngine(settings, client=client)
        # Temporal answers the start's next try before the cancel's: the cancel is held until a worker
        # has called the model for the child, or the child has ended.
        held, cancel = asyncio.Event(), engine._cancel

        async def cancel_late(child, reason):
            await held.wait()
            await cancel(child, reason)

        monkeypatch.setattr(engine, "_cancel", cancel_late)
        env = await make_env(engine=engine)
        await asyncio.to_thread(server.stop)
        with env.turn():
            handle = await env.service.launch(SubagentLaunchRequest(goal="launched during an outage"))
            await until(lambda: any("following it again" in r.getMessage() for r in caplog.records))
            assert (await env.service.cancel(handle, reason="changed my mind")).accepted
        await asyncio.to_thread(server.start)
        model = ScriptedModel({"leaf": lambda r: {"wait": "called", "text": "ran though it was cancelled"}})
        toolbox = WorkerToolbox(tools=make_registry(), model_for=lambda provider, name: model)
        async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
            await until(lambda: model.requests or not env.service.host_view().children("parent-1"), timeout=20)
            held.set()
            with env.turn():
                assert (await env.service.wait(handle, timeout_seconds=20)).completed
                result = await env.service.result(handle)
        assert (result.state, result.error_message) == (S.CANCELLED, "cancelled before start: changed my mind")
        assert model.requests == []
        assert await no_workflow(client, handle.subagent_id)
    finally:
        await asyncio.to_thread(discard, server)
