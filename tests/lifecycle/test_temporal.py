"""What only the Temporal engine does: children outlive the service, re-attach by id, and the
workflow's own liveness (activity timeouts, the budget warning) speaks as in-process.

The contract both engines share runs in test_service.py and test_delegate.py (the
``both_engines`` tests); the real processes (`switchboard run`, `switchboard worker`)
are in tests/scenarios/test_scale_out.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import uuid
from types import SimpleNamespace

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RetryConfig, RPCError

from agent import ModelRequest, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.tools import FileScope, file_toolset
from lifecycle import ChildJob, ChildOutcome, SubagentLaunchRequest, SubagentLifecycle, SubagentState
from lifecycle._liveness import BUDGET_WARNING
from lifecycle.settings import DelegationSettings, TemporalSettings
from lifecycle.temporal import WORKFLOW, ChildLimits, ChildWorker, TemporalEngine, WorkerToolbox
from lifecycle.temporal import _engine as temporal_engine
from lifecycle.temporal._wire import PAYLOAD_LIMIT_BYTES, STEER
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.conftest import make_registry
from tests.plugin_modules import plugin_module
from tests.polling import until

S = SubagentState


async def until_in_history(workflow: WorkflowHandle, event_type: EventType.ValueType, count: int = 1) -> None:
    """Until the workflow's history holds ``count`` events of ``event_type``, read as Temporal
    appends them (a long poll: ``wait_new_event``), not polled."""
    seen = 0
    async with asyncio.timeout(20):
        async for event in workflow.fetch_history_events(wait_new_event=True):
            seen += event.event_type == event_type
            if seen >= count:
                return
    raise AssertionError(f"the workflow closed with {seen} of {count} {EventType.Name(event_type)} events")


async def until_cancel_requested(workflow: WorkflowHandle) -> None:
    """Until the workflow's history holds a cancellation request: the stop reached Temporal."""
    await until_in_history(workflow, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)


async def until_signalled(workflow: WorkflowHandle, count: int) -> None:
    """Until the workflow's history holds ``count`` signals: the steers reached Temporal."""
    await until_in_history(workflow, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, count)


def journaled_steers(db, subagent_id: str) -> list[str]:
    """The texts of the child's unsent steers as the journal's file holds them (another process's view)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        (steers,) = conn.execute("SELECT steers FROM lifecycle_records WHERE subagent_id = ?",
                                 (subagent_id,)).fetchone()
    return [s["text"] for s in json.loads(steers)] if steers else []


async def exists(workflow: WorkflowHandle) -> bool:
    """Whether Temporal has the workflow (its start reached it)."""
    try:
        await workflow.describe()
    except RPCError:
        return False
    return True


def crash(engine: TemporalEngine) -> None:
    """What a SIGKILL does to the engine: its requests stop where they are, and nothing of its `close` happens."""
    for task in list(engine._tasks):
        task.cancel()
    engine._host = None


async def test_children_outlive_a_restart_of_the_service_and_finish_once(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": f"finished {r.metadata['goal']}"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="long job", correlation_id="job-1"))
        await asyncio.wait_for(model.reached("gate"), 10)
        await until(lambda: first.service.host_view().children("parent-1")[0].state is S.RUNNING)
    await first.service.close()  # the gateway goes away; the child keeps running on the worker

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    stops = []
    second.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
    view = second.service.host_view()
    await until(lambda: view.children("parent-1") and view.children("parent-1")[0].state is S.RUNNING)
    assert view.children("parent-1")[0].goal == "long job"
    with second.turn():
        assert (await second.service.reconnect(handle.to_dict())).state is S.RUNNING
        with pytest.raises(Exception, match="Duplicate correlation_id"):
            await second.service.launch(SubagentLaunchRequest(goal="again", correlation_id="job-1"))
        model.release("gate")
        assert (await second.service.wait(handle.to_dict(), timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle.to_dict())).summary == "finished long job"
    assert stops == ["completed"]  # the completion ran once, after the restart


async def test_a_child_that_finished_while_the_service_was_down_is_reported_at_the_next_start(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done while away"}})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="quick"))
        await asyncio.wait_for(model.reached("gate"), 10)
    await first.service.close()
    model.release("gate")
    await client.get_workflow_handle(handle.subagent_id).result()

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "done while away"


async def test_closing_while_no_worker_has_taken_a_child_leaves_it_queued_not_failed(make_env, queue):
    """The gateway stops while its launch still waits for a worker: the child stays queued on
    Temporal and runs once a worker comes, and the next start reports it, as a success."""
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="queued"))

    async def started() -> bool:
        try:
            await client.get_workflow_handle(handle.subagent_id).describe()
            return True
        except Exception:
            return False

    async with asyncio.timeout(10):
        while not await started():
            await asyncio.sleep(0.01)
    await first.service.close()  # its follow is cancelled inside the update-with-start call

    await worker(ScriptedModel({"leaf": lambda r: {"text": "ran later"}}))
    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "ran later"


async def test_a_launch_is_idempotent_by_child_id(queue):
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "once"}}))
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t", goal="g",
                   workspace="/tmp")
    wire = {"job": job.to_dict(), "limits": ChildLimits().to_dict()}
    from temporalio.common import WorkflowIDConflictPolicy

    first = await client.start_workflow(WORKFLOW, wire, id=job.subagent_id, task_queue=settings.task_queue,
                                        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
    second = await client.start_workflow(WORKFLOW, wire, id=job.subagent_id, task_queue=settings.task_queue,
                                         id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
    assert first.result_run_id == second.result_run_id
    assert ChildOutcome.from_dict(await first.result()).summary == "once"


async def test_the_idle_cap_warns_at_80_percent_and_then_times_out_as_in_process(queue, tmp_path):
    """The workflow's budget warning and idle timeout, with a 1 s cap set directly in the limits
    (configured caps are 30 s at least: too slow for a test)."""
    settings, client, worker = queue
    seen = []

    def leaf(request: ModelRequest) -> dict:
        seen.append([m["content"] for m in request.messages if BUDGET_WARNING in str(m.get("content"))])
        if request.iteration == 0:
            return {"sleep": 0.9, "text": "working", "tool_calls": [{"name": "list_files"}]}
        return {"hang": True}

    await worker(ScriptedModel({"leaf": leaf}))
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="idle test", tools=("list_files",), workspace=str(tmp_path))
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    limits = ChildLimits(**{**limits.to_dict(), "idle_cap_seconds": 1.0})
    body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                         id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert seen[0] == [] and len(seen[1]) == 1  # warned once, delivered at the next step
    assert outcome.status == "timeout" and outcome.timeout.timeout_seconds == 1.0 and not outcome.timeout.stalled
    assert outcome.summary == "working" and outcome.timeout.timeout_phase == "after_llm_calls"
    # The second call never answered: as in-process, the timeout counts the answered one only.
    assert "timed out after 1s idle with 1 API call(s) completed" in outcome.error


async def test_a_child_the_workers_cannot_build_fails_with_the_reason(make_env, queue, tmp_path):
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "never"}}))
    env = await make_env(engine=TemporalEngine(settings, client=client))
    env.parent.workspace = tmp_path / "not-on-this-machine"
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="anything"))
        assert (await env.service.wait(handle, timeout_seconds=10)).state is S.FAILED
        result = await env.service.result(handle)
    assert "does not exist on worker" in result.error_message and "scale-out" in result.error_message


def test_limits_follow_the_delegation_settings():
    limits = ChildLimits.from_settings(DelegationSettings(child_timeout_seconds=5, stale_between_turns_seconds=60,
                                                          heartbeat_interval_seconds=2), None)
    assert (limits.idle_cap_seconds, limits.stale_between_turns_seconds) == (30.0, 60.0)  # caps below 30 s become 30
    assert limits.heartbeat_timeout_seconds == 6.0
    assert ChildLimits.from_dict(limits.to_dict()) == limits


def discard(server: DevServer) -> None:
    """Stops a test's own dev server for good, killed: nothing reads it again, and its graceful stop takes 1-2 s."""
    if server.process is not None:
        server.process.kill()
    server.stop()


@contextlib.asynccontextmanager
async def restartable(make_env, tmp_path, goal: str, text: str, *, db: str = "journal.db", script=None,
                      outage_after: bool = False):
    """A Temporal dev server of this test's own, which it may stop and start again, and a child
    launched on it that waits at the model's ``gate`` (then answers ``text``; ``script`` replaces
    that); the client retries a call for 0.3 s at most, so an outage outlasts its retries. The server
    is discarded as the block ends, or with ``outage_after`` stopped as an outage the test goes on through."""
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        model = ScriptedModel({"leaf": script or (lambda r: {"wait": "gate", "text": text})})
        toolbox = WorkerToolbox(tools=make_registry(), model_for=lambda provider, name: model)
        async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
            env = await make_env(engine=TemporalEngine(settings, client=client), db=db)
            with env.turn():
                handle = await env.service.launch(SubagentLaunchRequest(goal=goal))
                await asyncio.wait_for(model.reached("gate"), 10)
                yield SimpleNamespace(server=server, settings=settings, client=client, model=model, env=env,
                                      handle=handle)
    finally:
        await asyncio.to_thread(server.stop if outage_after else lambda: discard(server))


async def test_a_temporal_outage_longer_than_the_clients_retries_loses_no_child(make_env, tmp_path):
    """Temporal restarts while a child runs, for longer than the client retries one call: the
    child goes on on its worker, and the gateway follows it again instead of calling it lost."""
    async with restartable(make_env, tmp_path, "outlast", "survived the outage") as run:
        await asyncio.to_thread(run.server.stop)
        await asyncio.to_thread(run.server.start)
        run.model.release("gate")
        assert (await run.env.service.wait(run.handle, timeout_seconds=30)).state is S.SUCCEEDED
        assert (await run.env.service.result(run.handle)).summary == "survived the outage"


async def test_a_child_cancelled_before_any_worker_took_it_stays_cancelled_across_a_restart(make_env, queue):
    """No worker runs when the child is cancelled, and the gateway restarts before one comes: the
    request must already be in Temporal, or the child runs in full once a worker takes it."""
    settings, client, worker = queue
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="never wanted"))
        workflow = client.get_workflow_handle(handle.subagent_id)
        # Once its workflow exists (a child stopped before its start was sent is never started at all).
        await until(lambda: exists(workflow), 5, every=0.05)
        assert (await first.service.cancel(handle, reason="changed my mind")).state is S.CANCEL_REQUESTED

    async def cancel_recorded() -> bool:
        try:
            kinds = [e.event_type async for e in workflow.fetch_history_events()]
        except RPCError:  # not started yet
            return False
        return EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in kinds

    await until(cancel_recorded, 5, every=0.05)
    await first.service.close()

    model = ScriptedModel({"leaf": lambda r: {"text": "ran anyway"}})
    await worker(model)
    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with second.turn():
        # The journal remembers the cancel across the restart: the child ends as cancelled, not interrupted.
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.CANCELLED
        assert (await second.service.result(handle)).error_message == "cancelled before start: changed my mind"
    assert model.requests == []


async def test_children_waiting_for_a_worker_get_one_warning_naming_the_task_queue(make_env, queue, monkeypatch,
                                                                                      caplog):
    # With no worker on the queue, children wait for ever: the log must say why, once, not per child.
    monkeypatch.setattr(temporal_engine, "NO_WORKER_WARNING_SECONDS", 0.2)
    settings, client, worker = queue
    env = await make_env(engine=TemporalEngine(settings, client=client))
    with caplog.at_level("WARNING", logger="lifecycle.temporal"), env.turn():
        handles = [await env.service.launch(SubagentLaunchRequest(goal=f"queued {i}")) for i in range(3)]
        await until(lambda: any("waited" in r.getMessage() for r in caplog.records))
        await worker(ScriptedModel({"leaf": lambda r: {"text": "taken at last"}}))
        for handle in handles:
            assert (await env.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
    warnings = [r.getMessage() for r in caplog.records if "waited" in r.getMessage()]
    assert len(warnings) == 1 and repr(settings.task_queue) in warnings[0] and "switchboard worker" in warnings[0]
    # A worker on another namespace polls a queue of the same name: the warning must tell them apart.
    assert f"namespace {settings.namespace!r}" in warnings[0]


async def test_a_child_on_a_worker_keeps_out_of_the_files_its_parent_may_not_use(make_env, queue, tmp_path):
    """The parent's `FileScope` travels in the job: the worker's file tools refuse what the parent's would."""
    settings, client, worker = queue
    (tmp_path / "files" / "tg" / "bob").mkdir(parents=True)
    (tmp_path / "files" / "tg" / "bob" / "note.txt").write_text("bob's secret")

    def leaf(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "tool":
            return {"text": request.messages[-1]["content"]}
        return {"tool_calls": [{"name": "read_file", "arguments": {"path": request.metadata["goal"]}}]}

    tools = ToolRegistry()
    for tool in file_toolset():
        tools.register(tool)
    await worker(ScriptedModel({"leaf": leaf}), tools)
    env = await make_env(engine=TemporalEngine(settings, client=client))
    env.parent.services["file_scope"] = FileScope(private=("files/tg",), own="files/tg/alice")
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="files/tg/bob/note.txt"))
        assert (await env.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        summary = (await env.service.result(handle)).summary
    assert "'files/tg/bob/note.txt' is not this session's to use" in summary and "secret" not in summary


BIG = 3_000_000
"""Characters of one tool output or answer past Temporal's 2 MB payload limit."""


async def run_child(queue, model, tool_output: int) -> tuple[ChildOutcome, list]:
    """One child on a worker whose ``bulky`` tool answers ``tool_output`` characters, its calls counted."""
    settings, client, worker = queue
    calls = []
    tools = make_registry()
    tools.add("bulky", "big output", {"type": "object"}, lambda args, ctx: calls.append(1) or "x" * tool_output,
              toolset="file")
    await worker(model, tools)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="bulk", tools=("bulky",), workspace="/tmp")
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    async with asyncio.timeout(30):  # well inside the stall limits (450 s, 1200 s) a retried call would run to
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    return ChildOutcome.from_dict(body), calls


async def test_a_tool_output_over_temporals_payload_limit_is_refused_once_and_the_child_goes_on(queue):
    def leaf(request: ModelRequest) -> dict:
        if request.iteration == 0:
            return {"tool_calls": [{"name": "bulky"}]}
        return {"text": request.messages[-1]["content"]}

    outcome, calls = await run_child(queue, ScriptedModel({"leaf": leaf}), BIG)
    assert calls == [1]  # not run again and again until its stall limit
    assert outcome.status == "completed"
    assert "bulky's output (2.9 MB) is over Temporal's payload limit (2 MB)" in outcome.summary


async def test_an_answer_over_temporals_payload_limit_fails_the_child_once_saying_so(queue):
    model = ScriptedModel({"leaf": lambda r: {"text": "y" * BIG}})
    outcome, _ = await run_child(queue, model, 0)
    assert len(model.requests) == 1  # the model is not asked (and paid) again until the stall limit
    assert outcome.status == "failed"
    assert "the model's answer (2.9 MB) is over Temporal's payload limit" in outcome.error


async def test_a_conversation_that_outgrows_temporals_payload_limit_fails_the_child_saying_so(queue):
    """Each output fits, their sum does not: the next model call, which carries the conversation,
    would fail every workflow task for ever (WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE)."""
    model = ScriptedModel({"leaf": lambda r: {"tool_calls": [{"name": "bulky"}]} if r.iteration < 3 else {"text": "x"}})
    outcome, calls = await run_child(queue, model, 800_000)
    assert len(calls) == 3 and len(model.requests) == 3
    assert outcome.status == "failed"
    assert "the child's conversation (2.3 MB) is over Temporal's payload limit (2 MB)" in outcome.error


async def test_an_outcome_over_temporals_payload_limit_fails_the_child_saying_so(queue):
    """The answer fits, the outcome with its tool trace does not: the workflow could never complete."""
    answer = "z" * (PAYLOAD_LIMIT_BYTES - 1300)
    model = ScriptedModel({"leaf": lambda r: {"tool_calls": [{"name": "bulky"}]} if r.iteration < 20
                           else {"text": answer}})
    outcome, calls = await run_child(queue, model, 1)
    assert len(calls) == 20 and outcome.status == "failed" and outcome.summary is None
    assert "the child's outcome (2.0 MB) is over Temporal's payload limit (2 MB)" in outcome.error
    assert outcome.api_calls == 21  # what it spent still counts


async def test_a_stop_asked_while_temporal_is_down_reaches_the_child_once_it_is_back(make_env, tmp_path):
    """/stop while Temporal restarts, for longer than the client retries one call: the request is
    sent once it answers again, not dropped, and the child stops instead of running on to the end."""
    async with restartable(make_env, tmp_path, "stop me", "ran to the end") as run:
        await asyncio.to_thread(run.server.stop)
        await run.env.service.cancel(run.handle, reason="stop")
        await asyncio.to_thread(run.server.start)
        workflow = run.client.get_workflow_handle(run.handle.subagent_id)
        await until_cancel_requested(workflow)
        run.model.release("gate")
        assert (await run.env.service.wait(run.handle, timeout_seconds=20)).state is S.CANCELLED


async def test_a_restart_while_temporal_does_not_answer_follows_its_children_again_not_interrupted(make_env, tmp_path):
    """The gateway starts again while Temporal is down (connected, then refused): its children are
    followed once Temporal answers, not reported interrupted while they run on their workers."""
    async with restartable(make_env, tmp_path, "outlast", "still running", outage_after=True) as run:
        pass  # its worker stops with the block: the child's call is taken up again by the next one
    await run.env.service.close()
    back = asyncio.ensure_future(asyncio.to_thread(run.server.start))
    try:
        second = await make_env(engine=TemporalEngine(run.settings, client=run.client))
        await back
        toolbox = WorkerToolbox(tools=make_registry(), model_for=lambda provider, name: run.model)
        async with ChildWorker(run.client, run.settings.task_queue, toolbox, heartbeat_seconds=0.2):
            run.model.release("gate")
            with second.turn():
                assert (await second.service.wait(run.handle, timeout_seconds=20)).state is S.SUCCEEDED
    finally:
        await back
        await asyncio.to_thread(discard, run.server)


async def test_a_job_from_a_newer_gateway_fails_the_child_saying_so_not_stuck_for_ever(queue):
    """docs/scale-out.md (Upgrading): a worker older than the gateway fails the children it is
    handed. A job field it does not know failed every workflow task instead, and the child waited."""
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "never"}}))
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t", goal="g",
                   workspace="/tmp").to_dict()
    job["a_newer_field"] = 1
    async with asyncio.timeout(20):
        body = await client.execute_workflow(WORKFLOW, {"job": job, "limits": ChildLimits().to_dict()},
                                             id=job["subagent_id"], task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert outcome.status == "failed" and "a_newer_field" in outcome.error
    assert "the gateway and its workers on one version" in outcome.error


def steered_echo(request: ModelRequest) -> dict:
    """A child that waits at ``gate`` in its first model call, lists files, and then answers with
    what it read in the tool's result: the steered text delivered with it."""
    if request.iteration == 0:
        return {"wait": "gate", "text": "looking", "tool_calls": [{"name": "list_files"}]}
    return {"text": request.messages[-1]["content"]}


async def test_steering_a_child_while_temporal_is_down_reaches_it_once_it_is_back_in_order(make_env, tmp_path):
    """Steers asked while Temporal restarts were dropped with a debug line, though reported as delivered."""
    async with restartable(make_env, tmp_path, "steer me", "", script=steered_echo) as run:
        await until(lambda: run.env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        await asyncio.to_thread(run.server.stop)
        assert run.env.service.engine.steer(run.handle.subagent_id, "first: use metric units")
        assert run.env.service.engine.steer(run.handle.subagent_id, "second: and cite sources")
        await asyncio.to_thread(run.server.start)
        # both taken by Temporal before the child's next step reads them
        await until_signalled(run.client.get_workflow_handle(run.handle.subagent_id), 2)
        run.model.release("gate")
        assert (await run.env.service.wait(run.handle, timeout_seconds=20)).state is S.SUCCEEDED
        summary = (await run.env.service.result(run.handle)).summary
    assert summary.endswith("first: use metric units\nsecond: and cite sources")


async def test_a_steer_sent_again_after_a_lost_answer_is_read_once(queue):
    """Temporal signals are not idempotent: a steer whose answer was lost (it landed all the same) and
    that the gateway therefore sends again must not reach the child twice."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": steered_echo})
    await worker(model)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="steer once", tools=("list_files",), workspace="/tmp")
    workflow = await client.start_workflow(WORKFLOW, {"job": job.to_dict(), "limits": ChildLimits().to_dict()},
                                           id=job.subagent_id, task_queue=settings.task_queue)
    await asyncio.wait_for(model.reached("gate"), 10)
    for request in ({"id": "r1", "text": "once"}, {"id": "r1", "text": "once"}, {"id": "r2", "text": "twice"}):
        await workflow.signal(STEER, request)
    model.release("gate")
    async with asyncio.timeout(20):
        outcome = ChildOutcome.from_dict(await workflow.result())
    assert outcome.summary.endswith("\nonce\ntwice")


async def test_a_stop_asked_while_temporal_is_down_outlives_a_restart_of_the_gateway(make_env, tmp_path):
    """/stop while Temporal is down, and the gateway stops before Temporal is back: the stop it could
    not send is sent by the next start, instead of the child running to its end on its worker."""
    async with restartable(make_env, tmp_path, "stop me", "ran to the end", db="shared.db") as run:
        await until(lambda: run.env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        await asyncio.to_thread(run.server.stop)
        assert await run.env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 1
        await run.env.service.close(grace=0.5)  # the request still unsent is given up after a short grace
        await asyncio.to_thread(run.server.start)

        second = await make_env(engine=TemporalEngine(run.settings, client=run.client), db="shared.db")
        stops = []
        second.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
        workflow = run.client.get_workflow_handle(run.handle.subagent_id)
        await until_cancel_requested(workflow)
        run.model.release("gate")
        with second.turn():
            assert (await second.service.wait(run.handle, timeout_seconds=20)).state is S.INTERRUPTED
            result = await second.service.result(run.handle)
    assert result.summary != "ran to the end" and result.error_message == "stopped by /stop"
    assert stops == ["interrupted"]  # its completion ran once


async def test_steers_still_unsent_when_the_gateway_stops_during_an_outage_reach_the_child_after_the_restart(
        make_env, tmp_path):
    """Steers asked while Temporal is down, and the gateway stops before it is back: the next start sends
    them, in order, each once, as it does a stop, instead of their being lost with the process."""
    async with restartable(make_env, tmp_path, "steer me", "", db="shared.db", script=steered_echo) as run:
        await until(lambda: run.env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        await asyncio.to_thread(run.server.stop)
        assert run.env.service.engine.steer(run.handle.subagent_id, "first: use metric units")
        assert run.env.service.engine.steer(run.handle.subagent_id, "second: and cite sources")
        await run.env.service.close(grace=0.5)  # the steers still unsent are given up after a short grace
        await asyncio.to_thread(run.server.start)

        second = await make_env(engine=TemporalEngine(run.settings, client=run.client), db="shared.db")
        # Both taken by Temporal before the child's next step reads them.
        await until_signalled(run.client.get_workflow_handle(run.handle.subagent_id), 2)
        run.model.release("gate")
        with second.turn():
            assert (await second.service.wait(run.handle, timeout_seconds=20)).state is S.SUCCEEDED
            summary = (await second.service.result(run.handle)).summary
    assert summary.endswith("first: use metric units\nsecond: and cite sources")
    assert summary.count("first: use metric units") == 1


async def test_steers_asked_during_an_outage_outlive_a_crash_of_the_gateway(make_env, tmp_path):
    """Steers asked while Temporal is down are journaled once they cannot be sent, as a stop is, not only
    when the engine closes: a gateway killed during the outage lost the steers delegate_task had reported
    delivered. Once sent after the restart, the journal forgets them."""
    async with restartable(make_env, tmp_path, "steer me", "", db="shared.db", script=steered_echo) as run:
        sid, db = run.handle.subagent_id, tmp_path / "shared.db"
        await until(lambda: run.env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        await asyncio.to_thread(run.server.stop)
        assert run.env.service.engine.steer(sid, "first: use metric units")
        await until(lambda: journaled_steers(db, sid) == ["first: use metric units"])
        assert run.env.service.engine.steer(sid, "second: and cite sources")  # while the first waits
        await until(lambda: journaled_steers(db, sid) == ["first: use metric units", "second: and cite sources"])
        crash(run.env.service.engine)
        await asyncio.to_thread(run.server.start)

        second = await make_env(engine=TemporalEngine(run.settings, client=run.client), db="shared.db")
        await until_signalled(run.client.get_workflow_handle(sid), 2)
        await until(lambda: journaled_steers(db, sid) == [])  # sent: not sent again by a later start
        run.model.release("gate")
        with second.turn():
            assert (await second.service.wait(run.handle, timeout_seconds=20)).state is S.SUCCEEDED
            summary = (await second.service.result(run.handle)).summary
    assert summary.endswith("first: use metric units\nsecond: and cite sources")
    assert summary.count("first: use metric units") == 1


class NeverSent(TemporalEngine):
    """The process dies before the workflow's start is sent: the journal keeps the job."""

    def submit(self, job: ChildJob) -> None:
        pass


HOOK_LOG = """
    calls = []

    def register(ctx):
        ctx.register_hook("subagent_start", lambda **e: calls.append(("start", e["child_subagent_id"])))
        ctx.register_hook("subagent_stop", lambda **e: calls.append(("stop", e["child_session_id"], e["child_status"])))
"""


async def test_a_child_started_on_a_worker_while_the_service_starts_reaches_a_plugins_subagent_start(
        make_env, queue, tmp_path, monkeypatch):
    """The next start sends the workflow's start, and a worker takes the child before the gateway's plugins
    have loaded: their `subagent_start` (run on the gateway, as for every child on a worker) hears of it
    at the release, before its `subagent_stop`."""
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done after the restart"}})
    await worker(model)
    first = await make_env(engine=NeverSent(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="sent at the next start"))
    await first.service.close()

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db", hold_ends=True)
    await asyncio.wait_for(model.reached("gate"), 10)
    view = second.service.host_view()
    await until(lambda: view.children("parent-1")[0].state in (S.STARTING, S.RUNNING))  # reported starting
    plugin = plugin_module(tmp_path, monkeypatch, "hook_log_plugin", HOOK_LOG)
    plugins = PluginHost(ToolRegistry(), second.hooks)
    await plugins.load(["hook_log_plugin"], lifecycle=SubagentLifecycle(second.service))
    await second.service.release_ends()
    assert plugin.calls == [("start", handle.subagent_id)]
    model.release("gate")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
    assert plugin.calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]
