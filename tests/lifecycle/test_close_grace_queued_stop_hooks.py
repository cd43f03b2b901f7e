"""docs/lifecycle.md "One path for every child": on a graceful shutdown, an in-process child whose ``subagent_stop``
hooks still run when the close's grace runs out has its result journaled without waiting for them. A child still
waiting for a place under ``lifecycle.max_running`` is ended by the close itself (`Stopping._withdrawn`), and the close
waited for its whole end, hooks included, up to the hook timeout (`HookRegistry`'s): ``close(grace=0.05)`` took as
long as the hook did."""

from __future__ import annotations

import asyncio
import logging
import time

from lifecycle import SubagentLaunchRequest, SubagentState
from tests.polling import until

S = SubagentState


async def test_the_close_gives_up_on_the_stop_hooks_of_a_queued_child_at_its_grace(make_env, caplog):
    env = await make_env(max_running=1)
    env.hooks.timeout_seconds = 3
    gate, entered = asyncio.Event(), []

    async def hangs(**event):
        entered.append(event["child_session_id"])
        await gate.wait()  # never set before the close returns

    env.hooks.register("subagent_stop", hangs)
    with env.turn():
        ran = await env.service.launch(SubagentLaunchRequest(goal="runs [gate:never]"))
        queued = await env.service.launch(SubagentLaunchRequest(goal="waits for a place"))
    await env.child_model.reached("never")
    began = time.monotonic()
    try:
        await asyncio.wait_for(env.service.close(grace=0.05), 2.5)
    finally:
        took = time.monotonic() - began
        gate.set()
    assert took < 1.5, f"close(grace=0.05) took {took:.1f} s"
    assert sorted(entered) == sorted([ran.subagent_id, queued.subagent_id])  # each child's hooks had begun
    env2 = await make_env(max_running=1)  # the same journal, as after a restart: nothing lost
    with env2.turn():
        for handle in (ran, queued):
            result = await env2.service.result(handle)
            assert (result.state, result.error_message) == (S.INTERRUPTED, "interrupted by process exit")
    assert caplog.text.count("journaled without waiting for them") == 2
    # The hooks given up on end after the close: their children are not finished again, on a closed journal.
    await until(lambda: not env.service._supervisor._hooks_left and not env.service.engine._runs)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_cancel_of_a_queued_child_whose_stop_hook_hangs_does_not_hold_the_close_past_its_grace(
        make_env, caplog):
    env = await make_env(max_running=1)
    env.hooks.timeout_seconds = 3
    gate, entered = asyncio.Event(), asyncio.Event()

    async def hangs(**event):
        entered.set()
        await gate.wait()

    env.hooks.register("subagent_stop", hangs)
    with env.turn():
        await env.service.launch(SubagentLaunchRequest(goal="runs [gate:never]"))
        queued = await env.service.launch(SubagentLaunchRequest(goal="waits for a place"))
        await env.child_model.reached("never")
        cancelling = asyncio.ensure_future(env.service.cancel(queued))  # its hook holds the cancel up
        await entered.wait()
    began = time.monotonic()
    try:
        await asyncio.wait_for(env.service.close(grace=0.05), 2.5)
    finally:
        took = time.monotonic() - began
        gate.set()
    assert took < 1.5, f"close(grace=0.05) took {took:.1f} s"
    assert (await cancelling).accepted
    env2 = await make_env(max_running=1)
    with env2.turn():
        result = await env2.service.result(queued)
    assert (result.state, result.error_message) == (S.CANCELLED, "cancelled before start: cancelled by the parent")
    await until(lambda: not env.service._supervisor._hooks_left and not env.service.engine._runs)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_without_a_grace_the_close_waits_for_the_stop_hooks_of_a_queued_child(make_env):
    env = await make_env(max_running=1)
    gate, entered = asyncio.Event(), []

    async def waits(**event):
        entered.append(event["child_session_id"])
        await gate.wait()

    env.hooks.register("subagent_stop", waits)
    with env.turn():
        await env.service.launch(SubagentLaunchRequest(goal="runs [gate:never]"))
        queued = await env.service.launch(SubagentLaunchRequest(goal="waits for a place"))
    await env.child_model.reached("never")
    closing = asyncio.ensure_future(env.service.close())
    await until(lambda: queued.subagent_id in entered)
    await asyncio.sleep(0.05)
    assert not closing.done()
    gate.set()
    await closing
