import asyncio
import dataclasses
import json
import sqlite3

import pytest

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import (
    NOT_READY,
    RECONNECT_UNAVAILABLE,
    UNKNOWN_HANDLE,
    AsyncSubagentLifecycle,
    ChildHost,
    InProcessEngine,
    MemoryJournal,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
    SubagentReconnectResult,
    SubagentState,
)
from lifecycle._contract import compute_result_hash
from lifecycle.settings import DelegationSettings
from tests.polling import until

S = SubagentState


def req(goal="Review this change.", **kw):
    return SubagentLaunchRequest(goal=goal, **kw)


async def launch_and_wait(env, goal="Review this change.", **kw):
    with env.turn():
        handle = await env.service.launch(req(goal, **kw))
        done = await env.service.wait(handle, timeout_seconds=5)
        return handle, done, await env.service.result(handle)


async def test_launch_outside_a_turn_fails_closed(env):
    with pytest.raises(SubagentLifecycleError, match="^No active parent session is available.$"):
        await env.service.launch(req())


@pytest.mark.both_engines
async def test_launch_wait_result_round_trip(env):
    handle, done, result = await launch_and_wait(env, correlation_id="review-42")
    assert (done.state, done.completed, done.timed_out) == (S.SUCCEEDED, True, False)
    assert result.ready and result.summary == "done: Review this change."
    assert result.exit_reason == "completed" and result.error_classification is None
    assert result.usage.api_calls == 1 and result.usage.prompt_tokens == 10
    assert result.result_hash == compute_result_hash(dataclasses.replace(result, result_hash=None))
    assert (handle.role, handle.depth, handle.parent_session_id) == ("leaf", 1, "parent-1")
    with env.turn():
        again = SubagentHandle.from_dict(json.loads(json.dumps(handle.to_dict())))
        assert await env.service.result(again) == result
        assert (await env.service.status(handle.to_dict())).state is S.SUCCEEDED


@pytest.mark.both_engines
async def test_wait_times_out_without_stopping_the_child(env):
    with env.turn():
        handle = await env.service.launch(req("[hang]"))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        done = await env.service.wait(handle, timeout_seconds=0.05)
        assert (done.completed, done.timed_out, done.state) == (False, True, S.RUNNING)
        result = await env.service.result(handle)
        assert (result.ready, result.error_classification) == (False, NOT_READY)


@pytest.mark.parametrize("timeout", ["5", True, float("nan"), [1]])
async def test_a_wait_timeout_that_is_no_number_of_seconds_fails_closed(env, timeout):
    # A string raised TypeError out of the API, True waited one second, NaN did not wait at all.
    with env.turn():
        handle = await env.service.launch(req("[hang]"))
        with pytest.raises(SubagentLifecycleError, match=r"^timeout_seconds must be a number of seconds or None\.$"):
            await env.service.wait(handle, timeout_seconds=timeout)
        assert (await env.service.status(handle)).state in (S.PENDING, S.STARTING, S.RUNNING)
        assert (await env.service.wait(handle, timeout_seconds=-1)).timed_out  # negative: do not wait


@pytest.mark.parametrize("timeout", [10**400, float("inf")], ids=["10**400", "inf"])
async def test_a_wait_timeout_too_large_for_the_clock_waits_until_the_end(env, timeout):
    with env.turn():
        handle = await env.service.launch(req("[gate:go]"))
        waiting = asyncio.ensure_future(env.service.wait(handle, timeout_seconds=timeout))
        await env.child_model.reached("go")
        assert not waiting.done()
        env.child_model.release("go")
        done = await asyncio.wait_for(waiting, 5)
        assert (done.state, done.completed, done.timed_out) == (S.SUCCEEDED, True, False)


@pytest.mark.both_engines
async def test_a_waiter_giving_up_leaves_the_others_waiting(env):
    with env.turn():
        handle = await env.service.launch(req("[sleep:0.2]"))
        record = env.service._supervisor.get(handle.subagent_id)
        impatient = asyncio.ensure_future(env.service.wait(handle))
        patient = asyncio.ensure_future(env.service.wait(handle))
        for _ in range(20):  # polling with short timeouts must not pile waiters up on the record
            assert (await env.service.wait(handle, timeout_seconds=0)).timed_out
        assert len(record._waiters) == 2  # the two that wait on; each poll forgot its own
        impatient.cancel()
        assert (await patient).state is S.SUCCEEDED and impatient.cancelled()
        assert record._waiters is None


async def test_a_result_is_readable_only_once_it_is_journaled(env):
    journal = env.service.journal
    seen = []
    real_flush, real_committed = journal.flush, journal.committed

    def flush():
        # While the terminal row is written and committed, the child must still look unfinished.
        if any(r.result for r in journal._pending.values()):
            record = env.service._supervisor.get(handle.subagent_id)
            seen.append(("flush", record.state, record.result))
        real_flush()

    def committed(error):
        if seen and len(seen) == 1:
            record = env.service._supervisor.get(handle.subagent_id)
            seen.append(("committed", record.state, record.result))
        real_committed(error)

    journal.flush, journal.committed = flush, committed
    with env.turn():
        handle = await env.service.launch(req())
        assert (await env.service.wait(handle)).state is S.SUCCEEDED
        assert (await env.service.result(handle)).ready
    assert seen == [("flush", S.RUNNING, None), ("committed", S.RUNNING, None)]


async def test_forged_foreign_and_malformed_handles_are_unknown(env, make_env):
    handle, _, _ = await launch_and_wait(env)
    forged = dataclasses.replace(handle, capability="forged")
    tampered = dataclasses.replace(handle, depth=2)
    other_version = dataclasses.replace(handle, contract_version=2)
    with env.turn():
        for bad in (forged, tampered, other_version, {"subagent_id": handle.subagent_id}, "garbage", None):
            assert (await env.service.status(bad)).state is S.UNKNOWN
            assert (await env.service.status(bad)).diagnostic == UNKNOWN_HANDLE
            assert (await env.service.result(bad)).error_classification == UNKNOWN_HANDLE
            assert (await env.service.cancel(bad)).unknown_handle
            assert (await env.service.wait(bad)).state is S.UNKNOWN
            assert (await env.service.reconnect(bad)).diagnostic == RECONNECT_UNAVAILABLE
    other = AgentSession(model=env.parent.model, session_id="someone-else")
    with env.turn(other):
        assert (await env.service.status(handle)).state is S.UNKNOWN
    # Outside any turn there is no parent to match.
    assert (await env.service.status(handle)).state is S.UNKNOWN



async def test_hand_built_handles_with_unhashable_ids_are_unknown_not_errors(env):
    # A SubagentHandle object is never checked at construction: one built by hand may hold
    # anything, and must read as unknown like any other malformed handle.
    handle, _, _ = await launch_and_wait(env)
    with env.turn():
        for subagent_id in (["x"], {"a": 1}):
            bad = dataclasses.replace(handle, subagent_id=subagent_id)
            assert (await env.service.status(bad)).diagnostic == UNKNOWN_HANDLE
            assert (await env.service.wait(bad, timeout_seconds=1)).state is S.UNKNOWN
            assert (await env.service.result(bad)).error_classification == UNKNOWN_HANDLE
            assert (await env.service.cancel(bad)).unknown_handle
            assert (await env.service.reconnect(bad)).diagnostic == RECONNECT_UNAVAILABLE

@pytest.mark.parametrize(
    ("request_kw", "message"),
    [
        ({"goal": "  "}, "goal must be a non-empty string of at most 16000 characters."),
        ({"goal": "x" * 16_001}, "goal must be a non-empty string of at most 16000 characters."),
        ({"context": "x" * 32_001}, "context must be a string of at most 32000 characters."),
        ({"role": "boss"}, "role must be 'leaf' or 'orchestrator'."),
        ({"timeout_seconds": 5}, "Per-launch timeout is not supported"),
        ({"working_directory": "/tmp"}, "working_directory is not supported"),
        ({"blocked_tools": ("execute_code",)}, "Per-tool blocking is not supported"),
        ({"metadata": {"x": object()}}, "metadata['x'] is of type object, which JSON cannot carry"),
        ({"metadata": {"x": "y" * 9000}}, "metadata exceeds 8192 bytes."),
        ({"metadata": {"n": {7: "seven"}}}, "metadata['n'] has a key 7 of type int: metadata keys must be strings"),
        ({"allowed_toolsets": ("nope", "also")}, "Unknown toolsets: also, nope."),
        ({"model": "gpt-x"}, "Per-launch model override is not supported"),
        ({"parent_session_id": "other"}, "parent_session_id does not match the active session."),
    ],
)
async def test_bad_requests_fail_closed(env, request_kw, message):
    kw = {"goal": "ok", **request_kw}
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        await env.service.launch(SubagentLaunchRequest(**kw))
    assert str(err.value).startswith(message)
    assert env.service.host_view().children("parent-1") == ()


@pytest.mark.both_engines
async def test_duplicate_correlation_ids_are_rejected_per_parent(env):
    await launch_and_wait(env, correlation_id="c1")
    with env.turn(), pytest.raises(SubagentLifecycleError, match="Duplicate correlation_id"):
        await env.service.launch(req(correlation_id="c1"))


@pytest.mark.both_engines
async def test_toolsets_only_narrow_and_unsafe_tools_never_reach_children(make_env):
    env = await make_env(enabled={"file", "execute_code", "memory", "clarify", "messaging", "delegation"})
    with env.turn(), pytest.raises(SubagentLifecycleError, match="^Requested toolsets would broaden parent permissions.$"):
        await env.service.launch(req(allowed_toolsets=("web",)))
    await launch_and_wait(env, "plain leaf")
    await launch_and_wait(env, "narrowed", allowed_toolsets=("file",))
    tools = {r.metadata["goal"]: sorted(t["function"]["name"] for t in r.tools) for r in env.child_model.requests}
    assert tools["plain leaf"] == ["block", "execute_code", "list_files", "read_file"]
    assert tools["narrowed"] == ["block", "list_files", "read_file"]


@pytest.mark.both_engines
async def test_launch_metadata_cannot_pass_for_the_childs_goal_or_parent(env):
    # A plugin's metadata reaches the child's model calls, but never as the fields the service sets.
    await launch_and_wait(env, "the real goal", metadata={"goal": "spoofed", "parent_session_id": "other", "team": "a"})
    (request,) = [r for r in env.child_model.requests if r.metadata.get("team") == "a"]
    assert (request.metadata["goal"], request.metadata["parent_session_id"]) == ("the real goal", "parent-1")


async def test_orchestrators_keep_delegate_task_only_below_the_depth_limit(make_env):
    env = await make_env(delegation=DelegationSettings(max_spawn_depth=2))
    handle, _, _ = await launch_and_wait(env, "orchestrate", role="orchestrator")
    assert (handle.role, handle.depth) == ("orchestrator", 1)
    names = [t["function"]["name"] for t in env.child_model.requests[-1].tools]
    assert "delegate_task" in names and "clarify" not in names and "execute_code" in names
    shallow = await make_env(db="other.db")  # default max_spawn_depth=1
    handle, _, _ = await launch_and_wait(shallow, "orchestrate", role="orchestrator")
    assert (handle.role, handle.depth) == ("leaf", 1)
    assert "delegate_task" not in [t["function"]["name"] for t in shallow.child_model.requests[-1].tools]


async def test_pending_and_starting_are_really_used(make_env):
    env = await make_env(max_running=1)
    seen = []

    async def on_start(**event):
        with env.turn():
            seen.append((await env.service.status(handles[-1])).state)

    env.hooks.register("subagent_start", on_start)
    handles = []
    with env.turn():
        handles.append(await env.service.launch(req("[hang] first")))
        await until(lambda: seen)
        handles.append(await env.service.launch(req("second")))
        assert (await env.service.status(handles[1])).state is S.PENDING
        await env.service.cancel(handles[0])
        assert (await env.service.wait(handles[1], timeout_seconds=5)).state is S.SUCCEEDED
    assert seen == [S.STARTING, S.STARTING]


@pytest.mark.both_engines
async def test_cancel_while_running_is_cooperative_and_keeps_partial_output(env):
    with env.turn():
        handle = await env.service.launch(req("[hang]"))
        await until(lambda: env.child_model.requests and len(env.child_model.requests) >= 2)
        cancelled = await env.service.cancel(handle, reason="user changed their mind")
        assert (cancelled.accepted, cancelled.state) == (True, S.CANCEL_REQUESTED)
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        result = await env.service.result(handle)
    assert result.state is S.CANCELLED and result.summary == "partial thoughts"
    assert result.exit_reason == "interrupted" and result.error_classification == "INTERRUPTED"
    assert "user changed their mind" in result.error_message


async def test_cancel_before_start_never_builds_the_child(make_env):
    env = await make_env(max_running=1)
    starts = []
    env.hooks.register("subagent_start", lambda **e: starts.append(e["child_goal"]))
    with env.turn():
        blocker = await env.service.launch(req("[hang] blocker"))
        queued = await env.service.launch(req("queued"))
        result = await env.service.cancel(queued)
        assert result.state is S.CANCEL_REQUESTED
        assert (await env.service.wait(queued, timeout_seconds=5)).state is S.CANCELLED
        await env.service.cancel(blocker)
        await env.service.wait(blocker, timeout_seconds=5)
    assert starts == ["[hang] blocker"]


@pytest.mark.both_engines
async def test_cancelling_a_finished_child_changes_nothing(env):
    handle, _, result = await launch_and_wait(env)
    with env.turn():
        cancelled = await env.service.cancel(handle)
        assert (cancelled.accepted, cancelled.already_terminal, cancelled.state) == (False, True, S.SUCCEEDED)
        assert await env.service.result(handle) == result


@pytest.mark.both_engines
async def test_cancelling_a_finishing_child_says_it_already_finished(env):
    """Its end is known (its `subagent_stop` hooks run, its result is not published yet): the cancel
    comes after that end, changes nothing, and says so, rather than report a cancellation that never happens."""
    in_hook, go_on = asyncio.Event(), asyncio.Event()

    async def slow_stop(**event):
        in_hook.set()
        await go_on.wait()

    env.hooks.register("subagent_stop", slow_stop)
    with env.turn():
        handle = await env.service.launch(req())
        await asyncio.wait_for(in_hook.wait(), 5)
        cancelled = await env.service.cancel(handle)
        go_on.set()
        done = await env.service.wait(handle, timeout_seconds=5)
    assert (cancelled.accepted, cancelled.already_terminal, cancelled.state) == (False, True, S.SUCCEEDED)
    assert cancelled.message == "The subagent already finished (SUCCEEDED)."
    assert done.state is S.SUCCEEDED


async def test_cancelling_a_child_whose_end_is_held_while_the_service_starts_says_it_already_finished(make_env):
    env = await make_env(hold_ends=True)
    with env.turn():
        handle = await env.service.launch(req())
        view = env.service.host_view()
        await until(lambda: [c.activity for c in view.children("parent-1")] == ["finishing"])
        cancelled = await env.service.cancel(handle)
        await env.service.release_ends()
        done = await env.service.wait(handle, timeout_seconds=5)
    assert (cancelled.accepted, cancelled.already_terminal, cancelled.state) == (False, True, S.SUCCEEDED)
    assert cancelled.message == "The subagent already finished (SUCCEEDED)."
    assert done.state is S.SUCCEEDED


@pytest.mark.both_engines
async def test_failures_are_classified(env):
    _, done, result = await launch_and_wait(env, "[fail]")
    assert done.state is S.FAILED
    assert (result.error_classification, result.exit_reason) == ("FAILED", "error")
    assert "model exploded" in result.error_message


@pytest.mark.both_engines
async def test_long_summaries_are_bounded_and_flagged(env):
    _, _, result = await launch_and_wait(env, "[long]")
    assert len(result.summary) == 32_000
    assert result.summary_truncated and result.summary_original_length == 40_000


@pytest.mark.both_engines
async def test_hooks_run_in_order_once_per_child_and_a_failing_hook_is_survived(env, caplog):
    calls = []
    env.hooks.register("subagent_start", lambda **e: calls.append(("start", e["child_goal"])))
    env.hooks.register("subagent_stop", lambda **e: calls.append(("stop-1", e["child_status"])))

    def broken(**e):
        raise RuntimeError("hook broke")

    env.hooks.register("subagent_stop", broken)
    env.hooks.register("subagent_stop", lambda **e: calls.append(("stop-3", e["child_status"])))
    await launch_and_wait(env, "work")
    assert calls == [("start", "work"), ("stop-1", "completed"), ("stop-3", "completed")]
    assert "hook broke" in caplog.text


async def test_a_hanging_stop_hook_does_not_keep_the_child_from_finishing(env, caplog):
    # An observer that never returns (a dead network call in a plugin) must not hold the
    # child's result, its waiters and the service's close for ever.
    env.hooks.timeout_seconds = 0.05
    env.hooks.register("subagent_stop", lambda **e: None, owner="quick_plugin")

    async def hang(**e):
        await asyncio.Event().wait()

    env.hooks.register("subagent_stop", hang, owner="stuck_plugin")
    _, done, result = await launch_and_wait(env, "work")
    assert done.state is SubagentState.SUCCEEDED and result.summary
    assert "hook subagent_stop (plugin stuck_plugin: " in caplog.text and "did not finish in 0.05 s" in caplog.text


@pytest.mark.both_engines
async def test_child_cost_rolls_up_into_the_parent(env):
    _, _, result = await launch_and_wait(env, "[cost] a")
    await launch_and_wait(env, "[cost] b")
    assert result.usage.cost_usd == 0.25
    assert env.parent.total_cost_usd == pytest.approx(0.5)
    assert env.parent.total_api_calls == 2


@pytest.mark.both_engines
async def test_memory_provider_is_told_once_per_child(make_env):
    env = await make_env()
    told = []

    class Memory:
        async def on_delegation(self, **event):
            told.append(event)

    env.service.host = dataclasses.replace(env.service.host, memory=Memory())
    await launch_and_wait(env, "remember me")
    assert [(t["goal"], t["summary"]) for t in told] == [("remember me", "done: remember me")]


async def test_retention_sweep_forgets_old_records_and_frees_correlation_ids(make_env):
    env = await make_env(retention=60)
    handle, _, _ = await launch_and_wait(env, correlation_id="c1")
    env.clock.advance(61)
    assert await env.service.sweep() == 1
    with env.turn():
        assert (await env.service.reconnect(handle)).diagnostic == RECONNECT_UNAVAILABLE
        await env.service.launch(req(correlation_id="c1"))  # freed


async def test_the_sweep_runs_in_the_background(make_env):
    env = await make_env(retention=0, sweep=0.01)
    handle, _, _ = await launch_and_wait(env)
    env.clock.advance(1)
    with env.turn():
        async def swept() -> bool:
            return not (await env.service.reconnect(handle)).connected

        await until(swept)


async def test_key_rotation_keeps_old_handles_until_their_key_is_retired(make_env):
    env = await make_env(db="keys.db")
    old, _, _ = await launch_and_wait(env, "before rotation")
    old_kid = old.capability.split(".")[1]
    new_kid = await env.service.rotate_key()
    new, _, _ = await launch_and_wait(env, "after rotation")
    assert new.capability.split(".")[1] == new_kid != old_kid
    with env.turn():
        assert (await env.service.status(old)).state is S.SUCCEEDED
        await env.service.retire_key(old_kid)
        assert (await env.service.status(old.to_dict())).state is S.UNKNOWN
        assert (await env.service.status(old)).state is S.UNKNOWN
        assert (await env.service.status(new)).state is S.SUCCEEDED
    # The ring is persisted: a restarted service agrees.
    await env.service.close()
    again = await make_env(db="keys.db")
    with again.turn():
        assert (await again.service.status(old.to_dict())).state is S.UNKNOWN
        assert (await again.service.reconnect(new.to_dict())).connected



async def test_retiring_a_key_the_ring_does_not_hold_is_a_lifecycle_error(env):
    handle, _, _ = await launch_and_wait(env)
    for kid in ("nope", ["not", "a", "kid"]):
        with pytest.raises(SubagentLifecycleError, match="^Unknown handle key") as err:
            await env.service.retire_key(kid)
        assert err.value.code == "UNKNOWN_KEY"
    with env.turn():  # nothing was revoked
        assert (await env.service.status(handle.to_dict())).state is S.SUCCEEDED

async def test_result_after_wait_reads_no_journal_and_older_results_come_back_from_it(env):
    journal = env.service.journal
    real_get, reads = journal.get, []

    async def counting_get(subagent_id):
        reads.append(subagent_id)
        return await real_get(subagent_id)

    journal.get = counting_get
    with env.turn():
        handles = [await env.service.launch(req(f"task {i}")) for i in range(50)]
        for handle in handles:
            await env.service.wait(handle)
        results = [await env.service.result(h) for h in handles]
        assert reads == [] and all(r.ready for r in results)
        env.clock.advance(61)  # past the time results stay in memory, well inside the retention window
        await env.service.sweep()
        assert await env.service.result(handles[0].to_dict()) == results[0]
        assert await env.service.result(handles[0]) == results[0]  # read back once, then remembered
    assert reads == [handles[0].subagent_id]


@pytest.fixture(params=["sqlite", "memory"])
async def closed_service(env, request) -> AsyncSubagentLifecycle:
    """The env's service (its SQLite journal) or one on a memory journal, started and then closed."""
    service = env.service
    if request.param == "memory":
        service = AsyncSubagentLifecycle(service.host, MemoryJournal())
        await service.start()
    await service.close()
    return service


async def test_launching_after_close_fails_closed_and_leaves_nothing_pending(env, closed_service):
    # On the memory journal the child was journaled PENDING and then the engine raised
    # RuntimeError('the engine is not running'): a wait() on it would never return.
    service = closed_service
    with env.turn(), pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as err:
        await service.launch(req())
    assert err.value.code == "CLOSED"
    assert service.host_view().children("parent-1") == ()
    with pytest.raises(SubagentLifecycleError, match="closed"):
        await service.rotate_key()


async def test_starting_again_after_close_fails_closed_and_starts_nothing(closed_service):
    # On the memory journal start() after close() reopened it and started a sweeper that no
    # later close() ended; on SQLite it failed with 'The journal is closed.', a journal error.
    service = closed_service
    sweepers = {t for t in asyncio.all_tasks() if t.get_name() == "lifecycle-sweeper" and not t.cancelling()}
    with pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as err:
        await service.start()
    assert err.value.code == "CLOSED"
    assert {t for t in asyncio.all_tasks() if t.get_name() == "lifecycle-sweeper" and not t.cancelling()} == sweepers


def _sweepers() -> set[asyncio.Task]:
    return {t for t in asyncio.all_tasks() if t.get_name() == "lifecycle-sweeper" and not t.cancelling()}


def _bare_service(journal=None, engine=None) -> AsyncSubagentLifecycle:
    return AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), journal or MemoryJournal(),
                                  engine=engine)


async def test_a_close_before_start_closes_the_service_for_good():
    # It did nothing: start() then opened the service, and launches said NOT_STARTED, not CLOSED.
    service, sweepers = _bare_service(), _sweepers()
    await service.close()
    with pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as refused:
        await service.start()
    assert refused.value.code == "CLOSED" and _sweepers() == sweepers
    with inside_turn(AgentSession(model=ScriptedModel())):
        with pytest.raises(SubagentLifecycleError) as launch:
            await service.launch(req())
        facade = SubagentLifecycle(service)  # a plugin's, from its worker thread

        def launch_from_a_plugin_thread():
            with pytest.raises(SubagentLifecycleError) as err:
                facade.launch(req())
            return err.value.code

        assert (launch.value.code, await asyncio.to_thread(launch_from_a_plugin_thread)) == ("CLOSED", "CLOSED")
    with pytest.raises(SubagentLifecycleError, match="closed"):
        await service.rotate_key()
    await service.close()  # still idempotent


class _GatedJournal(MemoryJournal):
    """Its open waits for `go_on`: a start held halfway."""

    def __init__(self) -> None:
        super().__init__()
        self.opening, self.go_on, self.closes = asyncio.Event(), asyncio.Event(), 0

    async def open(self) -> None:
        self.opening.set()
        await self.go_on.wait()

    async def close(self) -> None:
        self.closes += 1
        await super().close()


class _CountingEngine(InProcessEngine):
    closes = 0

    async def close(self, *, grace=None) -> None:
        self.closes += 1
        await super().close(grace=grace)


async def test_a_close_during_start_refuses_launches_waits_for_it_and_closes_what_it_opened():
    # The close returned at once, doing nothing: the start then completed, its sweeper ran for good,
    # and a launch ran a child to SUCCEEDED on a service that had been closed.
    journal, engine, sweepers = _GatedJournal(), _CountingEngine(2), _sweepers()
    service = _bare_service(journal, engine)
    starting = asyncio.ensure_future(service.start())
    await journal.opening.wait()
    closing = asyncio.ensure_future(service.close())
    await asyncio.sleep(0.01)
    parent = AgentSession(model=ScriptedModel({"leaf": lambda request: {"text": "ran"}}))
    with inside_turn(parent), pytest.raises(SubagentLifecycleError) as refused:
        await service.launch(req())
    assert refused.value.code == "CLOSING"
    assert not closing.done()  # it waits for the start
    journal.go_on.set()
    with pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as started:
        await starting
    assert started.value.code == "CLOSED"
    await asyncio.wait_for(closing, 5)
    assert (journal.closes, engine.closes) == (1, 1) and _sweepers() == sweepers
    with inside_turn(parent), pytest.raises(SubagentLifecycleError) as refused:
        await service.launch(req())
    assert refused.value.code == "CLOSED"


async def test_after_close_a_finished_child_the_service_no_longer_holds_reads_as_an_unknown_handle(env, tmp_path):
    # Its result was only in the closed journal: every read raised JournalError ('The journal is not open.').
    forgotten, _, _ = await launch_and_wait(env, "finished a while ago")
    env.clock.advance(61)  # its result leaves memory, and stays in the journal
    await env.service.sweep()
    held, _, result = await launch_and_wait(env, "finished just now")
    await env.service.close()
    service, view = env.service, env.service.host_view()
    with env.turn():
        status = await service.status(forgotten)
        assert (status.state, status.diagnostic) == (S.UNKNOWN, UNKNOWN_HANDLE)
        waited = await service.wait(forgotten)
        assert (waited.state, waited.completed) == (S.UNKNOWN, True)
        assert (await service.result(forgotten)).error_classification == UNKNOWN_HANDLE
        assert await service.reconnect(forgotten.to_dict()) == SubagentReconnectResult(False, S.UNKNOWN,
                                                                                       RECONNECT_UNAVAILABLE)
        cancelled = await service.cancel(forgotten)
        assert (cancelled.accepted, cancelled.unknown_handle) == (False, True)
        assert await service.result(held) == result  # the one it holds answers as before
    assert await view.lookup([forgotten.subagent_id]) == {}
    (entry,) = await view.finished_entries([(0, forgotten.subagent_id)], tmp_path)
    assert (entry["status"], entry["error"]) == ("error", "the subagent's result is no longer available")


async def test_a_plugin_steers_its_running_child_and_is_told_when_it_cannot(env):
    with env.turn():
        handle = await env.service.launch(req("[echo-steer]"))
        await until(lambda: env.child_model.requests)  # its first model call: it runs
        assert await env.service.steer(handle, "wrap up") is True
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.SUCCEEDED
        assert "wrap up" in (await env.service.result(handle)).summary
        assert await env.service.steer(handle, "too late") is False  # finished: nothing is queued
        assert await env.service.steer(handle.to_dict() | {"capability": "v1.x.forged"}, "hi") is False
        with pytest.raises(SubagentLifecycleError, match="text must be a non-empty string"):
            await env.service.steer(handle, " ")
    assert await env.service.steer(handle, "outside the turn") is False


async def test_a_launch_the_full_disk_refused_raises_and_leaves_no_child(env):
    journal = env.service.journal
    await journal.sync()
    (pages,) = journal.db.read_one("PRAGMA page_count")
    journal.db.read(f"PRAGMA max_page_count={pages}")  # SQLite refuses what needs a new page: SQLITE_FULL
    with env.turn(), pytest.raises(SubagentLifecycleError) as refused:
        await env.service.launch(req("x" * 12_000, correlation_id="job-1"))
    assert refused.value.code == "JOURNAL_WRITE_FAILED"
    assert str(refused.value).startswith("Not launched: the journal could not record the launch (database or disk")
    journal.db.read("PRAGMA max_page_count=1073741823")  # room again
    await journal.sync()
    assert await journal.unfinished() == [] and env.service.host_view().children("parent-1") == ()
    handle, done, _ = await launch_and_wait(env, correlation_id="job-1")  # the id was never taken
    assert done.state is S.SUCCEEDED


async def test_a_launch_the_full_disk_refused_is_not_counted_in_its_turns_progress(env):
    # It was: the turn's progress card read "Waiting for subagents: 1 of 2 done" for a turn whose
    # one child had finished, and the count was kept for good, never reaching its launched total.
    journal, view = env.service.journal, env.service.host_view()
    await journal.sync()
    (pages,) = journal.db.read_one("PRAGMA page_count")
    journal.db.read(f"PRAGMA max_page_count={pages}")
    with env.turn(), pytest.raises(SubagentLifecycleError):
        await env.service.launch(req("x" * 12_000))
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)
    journal.db.read("PRAGMA max_page_count=1073741823")
    await journal.sync()
    with env.turn():
        handle = await env.service.launch(req())
        assert view.turn_progress("parent-1", "turn-1") == (0, 1)
        await env.service.wait(handle, timeout_seconds=5)
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)


async def _launch_cancelled_while_its_commit_waits(env, *, full: bool) -> None:
    """Launch while another connection holds the write lock (the commit waits for it), cancel the
    caller, then release the lock: the launch's commit fails (``full``: a full disk) or goes through."""
    journal = env.service.journal
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
        if full:
            (pages,) = journal.db.read_one("PRAGMA page_count")
            journal.db.read(f"PRAGMA max_page_count={pages}")
        with env.turn():
            launching = asyncio.ensure_future(env.service.launch(req("x" * 12_000)))
        await until(lambda: env.service.host_view().children("parent-1"))  # journaled, waiting for the commit
        launching.cancel()
    finally:
        other.execute("ROLLBACK")
        other.close()
    with pytest.raises(asyncio.CancelledError):
        await launching
    journal.db.read("PRAGMA max_page_count=1073741823")  # room again
    await journal.sync()


async def test_a_launch_refused_while_its_caller_was_cancelled_leaves_nothing_in_the_journal(env):
    # The cancelled caller finished the children as INTERRUPTED ("cancelled before start") though the
    # journal had refused the launch: a child that never existed was listed, and its row written later.
    await _launch_cancelled_while_its_commit_waits(env, full=True)
    assert env.service.journal.db.read("SELECT subagent_id FROM lifecycle_records") == []
    view = env.service.host_view()
    assert (view.children("parent-1"), view.recent("parent-1")) == ((), ())
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)


async def test_a_launch_committed_while_its_caller_was_cancelled_ends_interrupted(env):
    await _launch_cancelled_while_its_commit_waits(env, full=False)
    [row] = env.service.journal.db.read("SELECT state, result FROM lifecycle_records")
    assert row[0] == "INTERRUPTED" and "cancelled before start" in row[1]
    [child] = env.service.host_view().recent("parent-1")
    assert child.state is S.INTERRUPTED


async def test_a_stop_asked_while_a_launch_is_journaled_stops_its_children(env):
    # A /stop reaching the children while their launch waited for its commit set their stop reason,
    # asked the engine (which had no such job yet) to stop them, and the launch then queued them:
    # they ran to their end as if no stop had been asked.
    journal = env.service.journal
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
        with env.turn():
            launching = asyncio.ensure_future(env.service.launch(req()))
        await until(lambda: env.service.host_view().children("parent-1"))  # journaled, waiting for the commit
        assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    handle = await launching
    with env.turn():
        done = await env.service.wait(handle, timeout_seconds=5)
        assert done.state is S.INTERRUPTED
        assert (await env.service.result(handle)).error_message == "stopped by /stop"
    assert env.child_model.requests == []  # it never made a model call


async def test_a_launch_committed_before_its_cancelled_caller_woke_ends_interrupted_if_a_later_commit_fails(env):
    # The launch's commit went through, but its caller was cancelled before it woke to hear so. Its
    # second wait then waited for the next commit, which carried only another child's row and failed
    # (a full disk): the launch was taken for refused and its children forgotten, their PENDING rows
    # committed all the same, for a restart to report as interrupted children that never ran.
    journal = env.service.journal
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
        with env.turn():
            launching = asyncio.ensure_future(env.service.launch(req()))
        await until(lambda: env.service.host_view().children("parent-1"))  # journaled, waiting for the commit
    finally:
        other.execute("ROLLBACK")
        other.close()
    journal.db.commit()  # the launch is committed now; its caller has not woken yet
    launching.cancel()
    (pages,) = journal.db.read_one("PRAGMA page_count")
    journal.db.read(f"PRAGMA max_page_count={pages}")  # the next commit fails: SQLITE_FULL
    [child] = env.service.host_view().children("parent-1")
    row = await journal.get(child.subagent_id)
    journal.put(dataclasses.replace(row, subagent_id="sa-other", goal="x" * 12_000))  # another child's row
    with pytest.raises(asyncio.CancelledError):
        await launching
    journal.db.read("PRAGMA max_page_count=1073741823")  # room again
    await journal.sync()
    states = dict(journal.db.read("SELECT subagent_id, state FROM lifecycle_records"))
    assert states == {row.subagent_id: "INTERRUPTED", "sa-other": "PENDING"}
