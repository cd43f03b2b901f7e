"""The engine seam: jobs and outcomes are plain data, and a second engine that runs
children elsewhere (a stand-in for a distributed one) serves the same contract,
including re-attaching to children that outlive a restart of the service."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence

import pytest

from agent import AgentSession, ModelResponse, PluginHost, ToolCall, ToolRegistry, ToolTraceEntry, Usage
from lifecycle import (
    ChildJob,
    ChildOutcome,
    EngineHost,
    InProcessEngine,
    JournalError,
    SqliteJournal,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
    SubagentState,
)
from lifecycle._children import ChildSpec
from lifecycle._liveness import Timeout
from lifecycle.settings import DelegationSettings
from lifecycle.temporal._wire import response_from_wire, response_to_wire
from tests.plugin_modules import plugin_module
from tests.polling import until

S = SubagentState


def over_the_wire(body: dict) -> dict:
    return json.loads(json.dumps(body))


class Recording(InProcessEngine):
    """The in-process engine, remembering every job it was given."""

    def __init__(self, max_running: int = 10) -> None:
        super().__init__(max_running)
        self.jobs: list[ChildJob] = []

    def submit(self, job: ChildJob) -> None:
        self.jobs.append(job)
        super().submit(job)


async def test_a_job_is_plain_data_resolved_at_launch(make_env):
    engine = Recording()
    env = await make_env(engine=engine, enabled={"file", "execute_code", "memory", "delegation"})
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(
            goal="look around", context="ctx", allowed_toolsets=("file", "memory"), metadata={"ticket": 7}))
        await env.service.wait(handle, timeout_seconds=5)
    (job,) = engine.jobs
    assert (job.subagent_id, job.parent_session_id, job.parent_turn_id) == (handle.subagent_id, "parent-1", "turn-1")
    assert (job.goal, job.context, job.role, job.depth) == ("look around", "ctx", "leaf", 1)
    assert job.toolsets == ("file", "memory")  # narrowed, sorted
    assert job.tools == ("list_files", "read_file", "block")  # memory is never a child's
    assert dict(job.metadata) == {"ticket": 7} and job.workspace == str(env.parent.workspace)
    assert (job.provider, job.model) == ("ScriptedModel", "scripted") == (handle.provider, handle.model)
    assert ChildJob.from_dict(over_the_wire(job.to_dict())) == job


def test_an_outcome_round_trips_through_json():
    outcome = ChildOutcome(
        "timeout", "timeout", "partial", "no progress", api_calls=3, duration_seconds=1.5, usage=Usage(10, 5),
        cost_usd=0.01, model="m", tool_trace=(ToolTraceEntry("read_file", ("path",), 10, 20, True, 0.25),),
        timeout=Timeout(30.0, 31.0, 30.5, "after_llm_calls", 3, False), schema={"schema_valid": True},
    )
    assert ChildOutcome.from_dict(over_the_wire(outcome.to_dict())) == outcome


@pytest.mark.parametrize("marks", [{"truncated": True}, {"filtered": True}])
def test_a_model_response_round_trips_through_the_temporal_wire(marks):
    response = ModelResponse("cut off", (ToolCall("c1", "read_file", "{}"),), Usage(10, 5), 0.01, "m", **marks,
                             reasoning=("reasoning_content", "look it up first"))
    assert response_from_wire(over_the_wire(response_to_wire(response))) == response


# -- a second engine: children on "workers" that outlive the service ----------------------------


class Workers:
    """Stands in for worker processes elsewhere: they receive jobs as JSON and keep running
    whatever happens to the service that launched them. Goals containing ``[hold]`` wait
    for `release` (or a stop)."""

    def __init__(self) -> None:
        self.jobs: dict[str, ChildJob] = {}
        self.results: dict[str, asyncio.Future] = {}
        self.running: dict[str, asyncio.Event] = {}
        self.stops: dict[str, str] = {}
        self.steered: dict[str, list[str]] = {}
        self.release = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()

    def run(self, wire: dict) -> None:
        job = ChildJob.from_dict(wire)
        sid = job.subagent_id
        self.jobs[sid] = job
        self.results[sid] = asyncio.get_running_loop().create_future()
        self.running[sid] = asyncio.Event()
        task = asyncio.create_task(self._work(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _work(self, job: ChildJob) -> None:
        sid = job.subagent_id
        await asyncio.sleep(0)
        self.running[sid].set()
        while "[hold]" in job.goal and not self.release.is_set() and sid not in self.stops:
            self._wake.clear()
            await self._wake.wait()
        if sid in self.stops:
            outcome = ChildOutcome("interrupted", "interrupted", "halfway", self.stops[sid], api_calls=1)
        else:
            notes = " ".join(self.steered.get(sid, ()))
            outcome = ChildOutcome("completed", "completed", f"worker did: {job.goal} {notes}".strip(), None,
                                   api_calls=2, usage=Usage(7, 3), cost_usd=0.5, model=job.model)
        self.results[sid].set_result(over_the_wire(outcome.to_dict()))

    def stop(self, sid: str, reason: str) -> None:
        self.stops.setdefault(sid, reason)
        self._wake.set()

    def let_go(self) -> None:
        self.release.set()
        self._wake.set()


class WorkerEngine:
    """A distributed engine in miniature: submits jobs to `Workers` and follows them."""

    survives_restart = True
    runs_here = False

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.host: EngineHost | None = None
        self._followers: set[asyncio.Task] = set()

    async def start(self, host: EngineHost, unfinished: Mapping[str, ChildJob | None]) -> Sequence[ChildJob]:
        self.host = host
        still = [self.workers.jobs[sid] for sid in unfinished if sid in self.workers.jobs]
        for job in still:
            self._follow(job.subagent_id, attached=True)
        never_got = [job for sid, job in unfinished.items() if job is not None and sid not in self.workers.jobs]
        for job in never_got:
            self.submit(job)
        return still + never_got

    def submit(self, job: ChildJob) -> None:
        self.workers.run(over_the_wire(job.to_dict()))
        self.host.placed(job.subagent_id)
        self._follow(job.subagent_id, attached=False)

    def _follow(self, sid: str, *, attached: bool) -> None:
        task = asyncio.create_task(self._report(sid, attached))
        self._followers.add(task)
        task.add_done_callback(self._followers.discard)

    async def _report(self, sid: str, attached: bool) -> None:
        host, workers = self.host, self.workers
        if not attached:
            await host.starting(sid)
        await workers.running[sid].wait()
        host.running(sid)
        body = await asyncio.shield(workers.results[sid])
        await host.finished(sid, ChildOutcome.from_dict(body))

    def withdraw(self, subagent_id: str) -> bool:
        return False  # once handed to the workers, a job can only be stopped

    def interrupt(self, subagent_id: str, reason: str) -> None:
        self.workers.stop(subagent_id, reason)

    def steer(self, subagent_id: str, text: str) -> bool:
        self.workers.steered.setdefault(subagent_id, []).append(text)
        return True

    def activity(self, subagent_id: str) -> str | None:
        running = self.workers.running.get(subagent_id)
        return "on a worker" if running is not None and running.is_set() else None

    async def close(self, *, grace: float | None = None) -> None:
        for task in list(self._followers):
            task.cancel()
        await asyncio.gather(*self._followers, return_exceptions=True)


@pytest.fixture
def workers():
    return Workers()


def hook_log(env):
    calls = []
    env.hooks.register("subagent_start", lambda **e: calls.append(("start", e["child_subagent_id"])))
    env.hooks.register("subagent_stop", lambda **e: calls.append(("stop", e["child_session_id"], e["child_status"])))
    return calls


async def test_another_engine_serves_the_same_plugin_contract(make_env, workers):
    env = await make_env(engine=WorkerEngine(workers))
    calls = hook_log(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[hold] remote work"))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        (child,) = env.service.host_view().children("parent-1")
        assert child.activity == "on a worker"
        assert (await env.service.status(handle)).state is S.RUNNING
        workers.let_go()
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.SUCCEEDED
        result = await env.service.result(handle)
    assert result.summary == "worker did: [hold] remote work" and result.usage.api_calls == 2
    assert calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]
    assert env.parent.total_cost_usd == pytest.approx(0.5)  # rolled up on the service's side


async def test_cancel_and_stop_reach_children_through_the_engine(make_env, workers):
    env = await make_env(engine=WorkerEngine(workers))
    with env.turn():
        cancelled, stopped = [await env.service.launch(SubagentLaunchRequest(goal=f"[hold] {g}")) for g in "ab"]
        await until(lambda: len(env.service.host_view().children("parent-1")) == 2 and all(
            c.state is S.RUNNING for c in env.service.host_view().children("parent-1")))
        assert (await env.service.cancel(cancelled, "changed my mind")).state is S.CANCEL_REQUESTED
        assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 2
        for h in (cancelled, stopped):
            await env.service.wait(h, timeout_seconds=5)
        first, second = [await env.service.result(h) for h in (cancelled, stopped)]
    assert (first.state, first.summary, first.error_message) == (S.CANCELLED, "halfway", "cancellation requested: changed my mind")
    assert (second.state, second.summary, second.error_message) == (S.INTERRUPTED, "halfway", "stopped by /stop")


async def test_children_outlive_a_restart_of_the_service_and_finish_once(make_env, workers):
    first = await make_env(engine=WorkerEngine(workers), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="[hold] long job", correlation_id="job-1"))
        await until(lambda: workers.running[handle.subagent_id].is_set())
    await first.service.close()  # the gateway restarts; the worker keeps going
    assert not workers.results[handle.subagent_id].done()

    second = await make_env(engine=WorkerEngine(workers), db="shared.db")
    calls = hook_log(second)
    view = second.service.host_view()
    await until(lambda: view.children("parent-1") and view.children("parent-1")[0].state is S.RUNNING)
    (child,) = view.children("parent-1")
    assert (child.subagent_id, child.goal) == (handle.subagent_id, "[hold] long job")
    with second.turn():
        assert (await second.service.reconnect(handle.to_dict())).state is S.RUNNING
        with pytest.raises(Exception, match="Duplicate correlation_id"):
            await second.service.launch(SubagentLaunchRequest(goal="again", correlation_id="job-1"))
        workers.let_go()
        assert (await second.service.wait(handle.to_dict(), timeout_seconds=5)).state is S.SUCCEEDED
        assert (await second.service.result(handle.to_dict())).summary == "worker did: [hold] long job"
    assert calls == [("stop", handle.subagent_id, "completed")]  # the completion ran once, after the restart


class SlowToReattach(WorkerEngine):
    """Re-attaching takes its time (on Temporal: another child's long history, a slow answer), and the
    children it follows meanwhile report: one that ended while no process followed it reports its end
    before `start` returns, before the service holds its record."""

    async def start(self, host: EngineHost, unfinished: Mapping[str, ChildJob | None]) -> Sequence[ChildJob]:
        jobs = await super().start(host, unfinished)
        await asyncio.gather(*self._followers)
        return jobs


async def test_a_child_that_reports_its_end_while_the_engine_re_attaches_is_finished_once_adopted(
        make_env, workers):
    first = await make_env(engine=WorkerEngine(workers), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="[hold] ends while no one follows"))
        await until(lambda: workers.running[handle.subagent_id].is_set())
    await first.service.close()
    workers.let_go()
    await workers.results[handle.subagent_id]  # the worker finished it while the gateway was down

    second = await make_env(engine=SlowToReattach(workers), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle.to_dict(), timeout_seconds=5)).state is S.SUCCEEDED
        result = await second.service.result(handle.to_dict())
    assert result.summary == "worker did: [hold] ends while no one follows" and result.usage.api_calls == 2


async def test_a_child_the_engine_lost_is_interrupted_after_a_restart(make_env, workers):
    first = await make_env(engine=WorkerEngine(workers), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="[hold] lost"))
    await first.service.close()
    second = await make_env(engine=WorkerEngine(Workers()), db="shared.db")  # other workers: they never saw it
    with second.turn():
        result = await second.service.result(handle)
    assert (result.state, result.error_message) == (S.INTERRUPTED, "interrupted by process exit")


class KilledBeforeSending(WorkerEngine):
    """The process dies between journaling a launch and handing its job to the workers."""

    def submit(self, job: ChildJob) -> None:
        pass


async def test_a_launch_whose_job_never_reached_the_engine_runs_after_a_restart(make_env, workers):
    first = await make_env(engine=KilledBeforeSending(workers), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="launched, then the process died"))
    await first.service.close()
    second = await make_env(engine=WorkerEngine(workers), db="shared.db")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=5)).state is S.SUCCEEDED
        assert (await second.service.result(handle)).summary == "worker did: launched, then the process died"


async def test_a_launch_stopped_before_its_job_reached_the_engine_is_not_handed_to_it_after_a_restart(
        make_env, workers):
    """The journal kept the job and the stop: the next start does not hand the job to the engine to run,
    only to stop it; the child ends as one stopped before it ran, with the reasons given in-process."""
    first = await make_env(engine=KilledBeforeSending(workers), db="shared.db")
    with first.turn():
        cancelled, stopped = [await first.service.launch(SubagentLaunchRequest(goal=g)) for g in ("a", "b")]
        await first.service.cancel(cancelled, "changed my mind")
        assert await first.service.host_view().interrupt_child(stopped.subagent_id, "stopped by /stop")
    await first.service.close()
    second = await make_env(engine=WorkerEngine(workers), db="shared.db")
    with second.turn():
        ended = [await second.service.result(h) for h in (cancelled, stopped)]
    assert [(r.state, r.error_message) for r in ended] == [
        (S.CANCELLED, "cancelled before start: changed my mind"), (S.INTERRUPTED, "stopped by /stop")]
    assert workers.jobs == {}


class PartlySent(WorkerEngine):
    """The process dies before the jobs of ``[unsent]`` children reach the workers."""

    def submit(self, job: ChildJob) -> None:
        if "[unsent]" not in job.goal:
            super().submit(job)


async def ended_while_down(make_env, workers) -> tuple[SubagentHandle, SubagentHandle]:
    """Two children that end at the next start: one cancelled before its engine had its job, one whose
    worker finished it while no process followed it."""
    first = await make_env(engine=PartlySent(workers), db="shared.db")
    with first.turn():
        unsent = await first.service.launch(SubagentLaunchRequest(goal="[unsent] never sent"))
        await first.service.cancel(unsent, "changed my mind")
        ran = await first.service.launch(SubagentLaunchRequest(goal="[hold] ends while no one follows"))
        await until(lambda: ran.subagent_id in workers.running and workers.running[ran.subagent_id].is_set())
    await first.service.close()
    workers.let_go()
    await workers.results[ran.subagent_id]
    return unsent, ran


STOP_LOG = """
    ended = []

    def register(ctx):
        ctx.register_hook("subagent_stop", lambda **e: ended.append((e["child_session_id"], e["child_status"])))
"""


async def test_children_that_end_while_the_service_starts_reach_hooks_registered_after_it_started(
        make_env, workers, tmp_path, monkeypatch):
    """As the gateway does: start holding ends, load the plugins (which may use the started service), then
    release. The plugin's `subagent_stop` hears of a child stopped before its engine had its job, and of one
    whose end the engine reported while re-attaching; each once."""
    unsent, ran = await ended_while_down(make_env, workers)
    plugin = plugin_module(tmp_path, monkeypatch, "stop_log_plugin", STOP_LOG)

    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    service = second.service
    assert [c.activity for c in service.host_view().children("parent-1")] == ["finishing", "finishing"]
    with second.turn():
        waiting = asyncio.ensure_future(service.wait(unsent.to_dict(), timeout_seconds=5))
    plugins = PluginHost(ToolRegistry(), second.hooks)
    await plugins.load(["stop_log_plugin"], lifecycle=SubagentLifecycle(service))
    assert plugins.loaded == ["stop_log_plugin"] and not waiting.done()
    await service.release_ends()
    assert sorted(plugin.ended) == sorted([(unsent.subagent_id, "interrupted"), (ran.subagent_id, "completed")])
    assert (await waiting).state is S.CANCELLED
    with second.turn():
        first, second_ = [await service.result(h.to_dict()) for h in (unsent, ran)]
    assert (first.state, first.error_message) == (S.CANCELLED, "cancelled before start: changed my mind")
    assert (second_.state, second_.summary) == (S.SUCCEEDED, "worker did: [hold] ends while no one follows")
    await service.release_ends()  # idempotent: nothing ends twice
    await service.close()
    assert len(plugin.ended) == 2


async def test_a_close_before_the_release_ends_the_held_children(make_env, workers, tmp_path):
    unsent, ran = await ended_while_down(make_env, workers)
    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    calls = hook_log(second)
    with second.turn():
        waiting = [asyncio.ensure_future(second.service.wait(h.to_dict(), timeout_seconds=5)) for h in (unsent, ran)]
    async with asyncio.timeout(5):
        await second.service.close()
        ended = await asyncio.gather(*waiting)
    assert [w.state for w in ended] == [S.CANCELLED, S.SUCCEEDED]
    assert sorted(calls) == sorted([("stop", unsent.subagent_id, "interrupted"), ("stop", ran.subagent_id, "completed")])
    journal = SqliteJournal(tmp_path / "shared.db")
    await journal.open()
    try:
        rows = [await journal.get(h.subagent_id) for h in (unsent, ran)]
    finally:
        await journal.close()
    assert [(r.state, r.job) for r in rows] == [("CANCELLED", None), ("SUCCEEDED", None)]


HOOK_LOG = """
    calls = []

    def register(ctx):
        ctx.register_hook("subagent_start", lambda **e: calls.append(("start", e["child_subagent_id"])))
        ctx.register_hook("subagent_stop", lambda **e: calls.append(("stop", e["child_session_id"], e["child_status"])))
"""


async def never_sent(make_env, goal: str) -> SubagentHandle:
    """A child launched in a process that died before its job reached the engine: the next start runs it."""
    first = await make_env(engine=KilledBeforeSending(Workers()), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal=goal))
    await first.service.close()
    return handle


async def load_hook_log(env, tmp_path, monkeypatch):
    """The plugin logging starts and stops, loaded as the gateway loads its plugins, once the service has started."""
    plugin = plugin_module(tmp_path, monkeypatch, "hook_log_plugin", HOOK_LOG)
    plugins = PluginHost(ToolRegistry(), env.hooks)
    await plugins.load(["hook_log_plugin"], lifecycle=SubagentLifecycle(env.service))
    assert plugins.loaded == ["hook_log_plugin"]
    return plugin


async def test_a_child_the_engine_starts_while_the_service_starts_reaches_hooks_registered_after_it_started(
        make_env, workers, tmp_path, monkeypatch):
    """Its job never reached the engine, which starts it now and reports it starting before the plugins load:
    their `subagent_start` hears of it at the release, once, and before its `subagent_stop`."""
    handle = await never_sent(make_env, "[hold] sent at the next start")
    second = await make_env(engine=WorkerEngine(workers), db="shared.db", hold_ends=True)
    view = second.service.host_view()
    await until(lambda: view.children("parent-1")[0].state in (S.STARTING, S.RUNNING))  # reported starting
    plugin = await load_hook_log(second, tmp_path, monkeypatch)
    assert plugin.calls == []
    await second.service.release_ends()
    assert plugin.calls == [("start", handle.subagent_id)]
    workers.let_go()
    with second.turn():
        assert (await second.service.wait(handle.to_dict(), timeout_seconds=5)).state is S.SUCCEEDED
    await second.service.release_ends()
    assert plugin.calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]


async def test_a_child_that_starts_and_ends_while_the_engine_re_attaches_gets_its_start_then_its_stop(
        make_env, workers, tmp_path, monkeypatch):
    """Reported starting, running and ended before the service holds its record: none of it is lost."""
    handle = await never_sent(make_env, "quick, at the next start")
    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    assert [c.activity for c in second.service.host_view().children("parent-1")] == ["finishing"]
    plugin = await load_hook_log(second, tmp_path, monkeypatch)
    await second.service.release_ends()
    assert plugin.calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]
    with second.turn():
        assert (await second.service.result(handle.to_dict())).summary == "worker did: quick, at the next start"


async def test_a_close_before_the_release_runs_the_held_starts_before_the_held_stops(make_env, workers):
    handle = await never_sent(make_env, "quick, at the next start")
    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    calls = hook_log(second)
    async with asyncio.timeout(5):
        await second.service.close()
    assert calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]



async def test_a_close_during_the_release_waits_for_it_and_nothing_runs_twice(make_env, workers):
    handle = await never_sent(make_env, "quick, at the next start")
    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    calls = hook_log(second)
    async with asyncio.timeout(5):
        await asyncio.gather(second.service.release_ends(), second.service.close())
    assert calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]


async def test_a_cancel_while_the_service_holds_a_childs_end_does_not_rewrite_that_end(make_env, workers):
    """The child was stopped (/stop) before its engine had its job, and ends so at the next start, its end held
    until the plugins have loaded: a cancel meanwhile (a plugin's, from `register`) comes after that end, and
    changes nothing, as for any child that finished first."""
    first = await make_env(engine=KilledBeforeSending(workers), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="stopped, then the process died"))
        assert await first.service.host_view().interrupt_child(handle.subagent_id, "stopped by /stop")
    await first.service.close()
    second = await make_env(engine=WorkerEngine(workers), db="shared.db", hold_ends=True)
    calls = hook_log(second)
    with second.turn():
        answer = await second.service.cancel(handle, "too late")
        await second.service.release_ends()
        result = await second.service.result(handle)
    assert (answer.accepted, answer.already_terminal, answer.state) == (False, True, S.INTERRUPTED)
    assert (result.state, result.error_message) == (S.INTERRUPTED, "stopped by /stop")
    assert calls == [("stop", handle.subagent_id, "interrupted")]


async def test_a_stop_that_meets_the_release_does_not_reach_the_held_children(make_env, workers):
    """Finishing from the start on, a held child stays out of every stop's reach while it is released: the
    stop says it is already finishing, and asks nothing of the engine."""
    unsent, ran = await ended_while_down(make_env, workers)
    second = await make_env(engine=SlowToReattach(workers), db="shared.db", hold_ends=True)
    view = second.service.host_view()
    stops = [view.interrupt_child(h.subagent_id, "stopped by /agents stop") for h in (unsent, ran)]
    async with asyncio.timeout(5):
        _, *reached = await asyncio.gather(second.service.release_ends(), *stops)
    assert reached == [False, False]
    assert ran.subagent_id not in workers.stops


async def running_on_a_worker(env, workers, goal="[hold] remote work") -> SubagentHandle:
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal=goal))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
    return handle


async def test_after_close_a_child_that_outlives_the_process_is_refused_a_stop_and_left_as_it_was(make_env, workers):
    """The journal is closed, so no stop can be kept for the next start to ask again: cancel raised JournalError
    and left the child CANCEL_REQUESTED though no stop reached its engine, and interrupt_children raised too."""
    env = await make_env(engine=WorkerEngine(workers), db="shared.db")
    handle = await running_on_a_worker(env, workers)
    view = env.service.host_view()
    await env.service.close()
    with env.turn():
        with pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as refused:
            await env.service.cancel(handle, "too late")
        assert refused.value.code == "CLOSED"
        assert (await env.service.status(handle)).state is S.RUNNING
        assert await env.service.steer(handle, "still there?") is False
    assert await view.interrupt_children("parent-1", "stopped by /stop") == 0
    assert await view.interrupt_child(handle.subagent_id, "stopped by /agents stop") is False
    assert [c.state for c in view.children("parent-1")] == [S.RUNNING]
    assert workers.stops == {} and workers.steered == {}
    again = await make_env(engine=WorkerEngine(workers), db="shared.db")  # follows it on, never asked to stop
    with again.turn():
        assert (await again.service.status(handle)).state is S.RUNNING
        assert (await again.service.cancel(handle, "now")).accepted
        assert (await again.service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
    assert workers.stops == {handle.subagent_id: "cancellation requested: now"}


async def test_a_stop_the_journal_refuses_leaves_the_child_as_it_was(make_env, workers):
    """A stop is journaled before the child takes it: one the journal refuses changes nothing, and is not
    taken for a stop already asked when asked again."""
    env = await make_env(engine=WorkerEngine(workers))
    handle = await running_on_a_worker(env, workers)
    view, journal = env.service.host_view(), env.service.journal

    def refused(record):
        raise JournalError("The journal is not open.", code="JOURNAL_CLOSED")

    journal.put = refused
    with env.turn():
        with pytest.raises(JournalError):
            await env.service.cancel(handle, "refused")
        assert (await env.service.status(handle)).state is S.RUNNING
        with pytest.raises(JournalError):
            await view.interrupt_child(handle.subagent_id, "refused too")
        assert await env.service.steer(handle, "not stopping") is True
    assert workers.stops == {}
    del journal.put
    assert await view.interrupt_child(handle.subagent_id, "stopped by /agents stop")
    with env.turn():
        await env.service.wait(handle, timeout_seconds=5)
        result = await env.service.result(handle)
    assert (result.state, result.error_message) == (S.INTERRUPTED, "stopped by /agents stop")
    assert (await journal.get(handle.subagent_id)).state == "INTERRUPTED"


async def test_the_in_process_engine_reports_what_a_child_does_and_takes_steering(make_env):
    engine = InProcessEngine(1)
    env = await make_env(engine=engine)
    with env.turn():
        running = await env.service.launch(SubagentLaunchRequest(goal="[echo-steer]"))
        queued = await env.service.launch(SubagentLaunchRequest(goal="queued"))
        assert engine.activity(queued.subagent_id) == "waiting for a slot" and engine.pending == 1
        assert not engine.steer(queued.subagent_id, "too early")
        await until(lambda: engine.activity(running.subagent_id) not in (None, "starting"))
        assert engine.steer(running.subagent_id, "wrap up")
        await env.service.wait(running, timeout_seconds=5)
        assert "wrap up" in (await env.service.result(running)).summary
        await env.service.wait(queued, timeout_seconds=5)
    await until(lambda: engine.running == 0)
    assert engine.activity(running.subagent_id) is None


async def test_waiting_children_take_turns_by_chat_so_one_chats_batch_does_not_hold_up_another(make_env):
    engine = InProcessEngine(1)
    env = await make_env(engine=engine)
    other = AgentSession(model=env.parent.model, tools=env.parent.tools, session_id="parent-2", clock=env.clock,
                         workspace=env.parent.workspace)
    supervisor = env.service._supervisor
    batch = [ChildSpec(goal="[gate:first] a0"), *(ChildSpec(goal=f"a{n}") for n in (1, 2, 3))]
    records = await supervisor.submit(env.parent, "turn-a", batch)
    await env.child_model.reached("first")  # the only slot is taken; a1-a3 wait
    (lone,) = await supervisor.submit(other, "turn-b", [ChildSpec(goal="b")])
    assert engine.pending == 4
    env.child_model.release("first")
    for record in (*records, lone):
        await record.waiter()
    order = [r.metadata["goal"] for r in env.child_model.requests if r.role == "leaf"]
    # Round robin between the chats waiting: the other chat's child is next after a1, not after a3.
    assert order == ["[gate:first] a0", "a1", "b", "a2", "a3"]
    assert engine.pending == 0


async def test_a_nested_child_waits_in_the_lane_of_its_top_level_chat(make_env):
    engine = InProcessEngine(1)
    env = await make_env(engine=engine, delegate=True, delegation=DelegationSettings(max_spawn_depth=2))
    other = AgentSession(model=env.parent.model, tools=env.parent.tools, session_id="parent-2", clock=env.clock,
                         workspace=env.parent.workspace)

    def orchestrate(request):
        if request.iteration == 0:
            tasks = [{"goal": "[gate:deep] c1"}, {"goal": "c2"}, {"goal": "c3"}]
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}
        return {"text": "planned"}

    env.child_model.script["orchestrator"] = orchestrate
    supervisor = env.service._supervisor
    (plan,) = await supervisor.submit(env.parent, "turn-a", [ChildSpec(goal="plan", role="orchestrator")])
    await env.child_model.reached("deep")  # c1 runs on the slot the orchestrator lent; c2, c3 wait
    (lone,) = await supervisor.submit(other, "turn-b", [ChildSpec(goal="b")])
    (later,) = await supervisor.submit(env.parent, "turn-a2", [ChildSpec(goal="a1")])
    env.child_model.release("deep")
    for record in (plan, lone, later):
        await record.waiter()
    order = [r.metadata["goal"] for r in env.child_model.requests if r.role == "leaf"]
    # c2, c3 and a1 are all the first chat's, which takes turns with the other chat as one.
    assert order == ["[gate:deep] c1", "c2", "b", "c3", "a1"]
