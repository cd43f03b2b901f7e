"""`cancel`'s reason: a string, kept to its first 500 characters; None for the default; anything else refused,
as every other argument of the API that is not what it should be."""

from __future__ import annotations

import asyncio

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError, SubagentState
from tests.polling import until

S = SubagentState


async def _running(env, goal: str = "[gate:held]"):
    handle = await env.service.launch(SubagentLaunchRequest(goal=goal))

    async def running() -> bool:
        return (await env.service.status(handle)).state is S.RUNNING

    await until(running)
    return handle


async def test_a_reason_that_is_not_a_string_is_refused_and_changes_nothing(env):
    # It was made text with str(): an exception object or a dict became the child's error, None the word "None".
    facade = SubagentLifecycle(env.service)
    with env.turn():
        handle = await _running(env)
        for reason in (ValueError("why"), {"why": "no"}, 42, b"bytes"):
            with pytest.raises(SubagentLifecycleError, match=r"^reason must be a string or None\.$"):
                await env.service.cancel(handle, reason)
        with pytest.raises(SubagentLifecycleError, match="reason must be a string or None"):
            await asyncio.to_thread(facade.cancel, handle, ["no"])
        with pytest.raises(SubagentLifecycleError, match="reason must be a string or None"):  # before the lookup
            await env.service.cancel({"forged": True}, 3)
        assert (await env.service.status(handle)).state is S.RUNNING  # not asked to stop
        assert (await env.service.cancel(handle, None)).accepted
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        result = await env.service.result(handle)
    assert result.error_message == "cancellation requested: cancelled by the parent"  # None: the default


async def test_a_long_reason_is_kept_to_its_first_500_characters(env):
    with env.turn():
        handle = await _running(env)
        assert (await env.service.cancel(handle, "x" * 499 + "yz" + "!" * 10_000)).accepted
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        result = await env.service.result(handle)
    assert result.error_message == "cancellation requested: " + "x" * 499 + "y"
