"""The host's view: frozen snapshots of a session's children, and stopping them."""

import dataclasses

import pytest

from lifecycle import ChildSnapshot, SubagentLaunchRequest, SubagentState
from tests.polling import until

S = SubagentState


async def launch(env, *goals):
    with env.turn():
        return [await env.service.launch(SubagentLaunchRequest(goal=goal)) for goal in goals]


async def finish(env, handles):
    with env.turn():
        return [await env.service.wait(h, timeout_seconds=5) for h in handles]


async def test_children_are_frozen_snapshots_in_launch_order_with_what_each_is_doing(make_env):
    env = await make_env(max_running=2)
    view = env.service.host_view()
    first, second, third = await launch(env, "[hang] one", "[stall-tool] two", "three waits")
    await until(lambda: [c.activity for c in view.children("parent-1")][:2] == ["waiting for the model", "running block"])
    children = view.children("parent-1")
    assert isinstance(children, tuple) and all(isinstance(c, ChildSnapshot) for c in children)
    assert [c.subagent_id for c in children] == [first.subagent_id, second.subagent_id, third.subagent_id]
    assert [c.state for c in children] == [S.RUNNING, S.RUNNING, S.PENDING]
    assert children[2].activity == "waiting for a slot" and children[2].started_at is None
    one = children[0]
    assert (one.parent_session_id, one.parent_turn_id, one.goal, one.role) == ("parent-1", "turn-1", "[hang] one", "leaf")
    assert one.model == "scripted" and one.summary is None and one.error is None and one.completed_at is None
    assert one.started_at is not None and one.created_at <= one.started_at
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.state = S.FAILED  # type: ignore[misc]
    assert await view.interrupt_children("parent-1", "test over") == 3
    await finish(env, [first, second, third])
    assert one.state is S.RUNNING  # a snapshot never changes
    assert view.children("parent-1") == () and view.children("someone-else") == ()


async def test_runs_here_while_a_child_the_turn_launched_runs_in_this_process(make_env):
    env = await make_env()
    view = env.service.host_view()
    assert not view.runs_here("parent-1", "turn-1")
    (child,) = await launch(env, "[hang] one")
    await until(lambda: [c.state for c in view.children("parent-1")] == [S.RUNNING])
    assert view.runs_here("parent-1", "turn-1")
    assert not view.runs_here("parent-1", "turn-2") and not view.runs_here("someone-else", "turn-1")
    await view.interrupt_children("parent-1", "test over")
    await finish(env, [child])
    assert not view.runs_here("parent-1", "turn-1")


async def test_recent_keeps_the_last_ten_finished_oldest_first(make_env):
    env = await make_env(max_running=1)  # one at a time: they finish in launch order
    view = env.service.host_view()
    early = await launch(env, "early 1", "early 2")
    await finish(env, early)
    handles = await launch(env, *[f"task {i}" for i in range(9)], "[fail] broken")
    await finish(env, handles)
    recent = view.recent("parent-1")
    assert len(recent) == 10 and all(c.state.terminal for c in recent)
    assert {c.subagent_id for c in recent} == {h.subagent_id for h in handles}
    assert [c.completed_at for c in recent] == sorted(c.completed_at for c in recent)  # oldest first
    (failed,) = [c for c in recent if c.goal == "[fail] broken"]
    assert failed.state is S.FAILED and "model exploded" in failed.error and failed.summary is None
    done = [c for c in recent if c.state is S.SUCCEEDED]
    assert all(c.summary == f"done: {c.goal}" and c.error is None and c.activity == "finished" for c in done)
    assert all(c.completed_at is not None and c.parent_turn_id == "turn-1" for c in recent)
    assert view.recent("someone-else") == ()


async def test_finished_children_leave_recent_with_the_retention_window(make_env):
    env = await make_env(retention=60)
    await finish(env, await launch(env, "old"))
    assert len(env.service.host_view().recent("parent-1")) == 1
    env.clock.advance(61)
    await env.service.sweep()
    assert env.service.host_view().recent("parent-1") == ()


async def test_turn_progress_counts_a_turns_children_while_any_runs(env):
    view = env.service.host_view()
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)
    quick, slow = await launch(env, "quick", "[hang] slow")
    await finish(env, [quick])
    assert view.turn_progress("parent-1", "turn-1") == (1, 2)
    assert view.turn_progress("parent-1", "another-turn") == (0, 0)
    await view.interrupt_children("parent-1", "done")
    await finish(env, [slow])
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)


async def test_interrupt_children_stops_live_ones_with_their_partial_output_and_counts_only_them(make_env):
    env = await make_env(max_running=1)
    view = env.service.host_view()
    (finished,) = await launch(env, "finished first")
    await finish(env, [finished])
    running, queued = await launch(env, "[hang] running", "queued")
    await until(lambda: len(env.child_model.requests) >= 3)  # the running child is in its second model call
    assert await view.interrupt_children("parent-1", "stopped by /stop") == 2
    with env.turn():
        assert (await env.service.status(queued)).state is S.INTERRUPTED  # a queued one ends at once
    await finish(env, [running])
    with env.turn():
        results = [await env.service.result(h) for h in (running, queued)]
    assert await view.interrupt_children("parent-1", "again") == 0
    partial, never_ran = results
    assert (partial.state, partial.summary, partial.error_message) == (S.INTERRUPTED, "partial thoughts", "stopped by /stop")
    assert (never_ran.state, never_ran.summary, never_ran.started_at) == (S.INTERRUPTED, None, None)



async def test_interrupt_child_stops_that_one_child_only_with_its_partial_output(make_env):
    env = await make_env(max_running=2)
    view = env.service.host_view()
    target, other = await launch(env, "[hang] target", "[hang] other")
    await until(lambda: [c.activity for c in view.children("parent-1")] == ["waiting for the model"] * 2)
    assert await view.interrupt_child(target.subagent_id, "stopped from the operator console")
    await finish(env, [target])
    with env.turn():
        stopped = await env.service.result(target)
    assert (stopped.state, stopped.error_message) == (S.INTERRUPTED, "stopped from the operator console")
    assert [c.subagent_id for c in view.children("parent-1")] == [other.subagent_id]  # the sibling runs on
    assert not await view.interrupt_child(target.subagent_id, "again")  # finished: nothing to stop
    assert not await view.interrupt_child("sa-unknown", "who?")
    await view.interrupt_children("parent-1", "test over")
    await finish(env, [other])


async def test_a_child_being_interrupted_is_stopping_so_steer_and_cancel_change_nothing(env):
    # It stayed RUNNING: steer still queued text, and a cancel was accepted and turned its end into
    # CANCELLED, with the interrupt's reason.
    (handle,) = await launch(env, "[hang] target")
    await until(lambda: len(env.child_model.requests) >= 2)  # in its second model call
    assert await env.service.host_view().interrupt_child(handle.subagent_id, "stopped by /agents stop")
    with env.turn():
        assert (await env.service.status(handle)).state is S.RUNNING  # until it reaches its next boundary
        assert await env.service.steer(handle, "carry on") is False
        answer = await env.service.cancel(handle, "changed my mind")
        await env.service.wait(handle, timeout_seconds=5)
        result = await env.service.result(handle)
    assert (answer.accepted, answer.already_terminal, answer.state) == (False, False, S.RUNNING)
    assert answer.message == "The subagent is already stopping."
    assert (result.state, result.error_message) == (S.INTERRUPTED, "stopped by /agents stop")


async def test_the_entry_of_a_child_nothing_remembers_has_every_field_of_an_entry(env, tmp_path):
    # It had five: task_index, subagent_id, status, summary and error.
    view = env.service.host_view()
    (handle,) = await launch(env, "remembered")
    (known,) = await view.finished_entries([(0, handle.subagent_id)], tmp_path)
    (gone,) = await view.finished_entries([(3, "sa-swept-long-ago")], tmp_path)
    assert set(gone) == set(known)
    assert gone == {
        "task_index": 3, "subagent_id": "sa-swept-long-ago", "role": None, "status": "error", "summary": None,
        "error": "the subagent's result is no longer available", "exit_reason": None, "truncated": False,
        "api_calls": 0, "duration_seconds": 0.0, "model": None, "tokens": {"input": 0, "output": 0},
        "cost_usd": None, "tool_trace": [], "timeout_seconds": None, "timed_out_after_seconds": None,
        "last_event_age": None, "timeout_phase": None,
    }
