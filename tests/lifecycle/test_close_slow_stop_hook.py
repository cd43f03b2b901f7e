"""A child that had finished keeps its result when the service closes while its ``subagent_stop`` hook (or its
memory notification) still runs past the close's grace: hooks observe, they never gate."""

from __future__ import annotations

import asyncio
import logging

from lifecycle import SubagentLaunchRequest, SubagentState
from tests.polling import until

S = SubagentState


def slow_stop_hook(env) -> tuple[asyncio.Event, asyncio.Event, asyncio.Event]:
    """A ``subagent_stop`` hook that runs until its gate opens; returns its entered, gate and left events."""
    entered, gate, left = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def observe(**event):
        entered.set()
        try:
            await gate.wait()
        finally:
            left.set()

    env.hooks.register("subagent_stop", observe)
    return entered, gate, left


async def test_a_result_whose_stop_hook_outlasts_the_close_is_journaled_for_the_next_start(make_env, caplog):
    env = await make_env()
    entered, gate, left = slow_stop_hook(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="quick"))
    await entered.wait()  # the child has succeeded; its hook still runs
    await env.service.close(grace=0.01)
    env2 = await make_env()  # the same journal, as after a restart
    with env2.turn():
        result = await env2.service.result(handle)
    # Before: never journaled, the next start ended it INTERRUPTED by process exit, its answer lost.
    assert (result.state, result.summary) == (S.SUCCEEDED, "done: quick")
    assert "journaled without waiting for them" in caplog.text
    caplog.clear()
    gate.set()  # the hook ends after the close: its child is not finished again, on a closed journal
    await left.wait()
    await until(lambda: not env.service.engine._runs)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and "could not be finished" in r.message]


async def test_a_stop_hook_that_ends_within_the_grace_is_waited_for(make_env):
    env = await make_env()
    entered, gate, left = slow_stop_hook(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="quick"))
    await entered.wait()
    closing = asyncio.ensure_future(env.service.close())
    await until(lambda: env.service.engine._closed)
    assert not closing.done()  # no grace given: the close waits for the hook, then journals the result
    gate.set()
    await closing
    assert left.is_set()
    env2 = await make_env()
    with env2.turn():
        result = await env2.service.result(handle)
    assert (result.state, result.summary) == (S.SUCCEEDED, "done: quick")
