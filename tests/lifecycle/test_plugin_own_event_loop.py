"""A plugin tool's worker thread that runs an event loop of its own (``asyncio.run`` around an async
library): the synchronous facade serves it as any worker thread, and the asyncio twin, bound to the
service's loop, refuses it before touching anything. The twin used to journal such a launch, then raise
a bare ``RuntimeError`` (a future of another loop), leaving a ``PENDING`` child no engine ran and its
correlation id held; the facade refused the thread as the event loop's own, pointing at that twin."""

import asyncio

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError, SubagentState


def _on_a_loop_of_its_own(make_coroutine):
    """What a plain-function tool does with an async helper: run it to its end on a new loop, in its thread."""
    try:
        return asyncio.run(make_coroutine())
    except Exception as error:  # handed back to the test's loop, which asserts on it
        return error


async def test_the_asyncio_twin_on_another_loop_is_refused_and_leaves_nothing(env):
    service = env.service
    with env.turn():
        running = await service.launch(SubagentLaunchRequest(goal="[stall-model]"))
        calls = {
            "launch": lambda: service.launch(SubagentLaunchRequest(goal="review", correlation_id="review-1")),
            "wait": lambda: service.wait(running, timeout_seconds=5),
            "cancel": lambda: service.cancel(running),
            "steer": lambda: service.steer(running, "wrap up"),
            "status": lambda: service.status(running.to_dict()),
        }
        for name, call in calls.items():
            refused = await asyncio.to_thread(_on_a_loop_of_its_own, call)
            assert isinstance(refused, SubagentLifecycleError), (name, refused)
            assert refused.code == "OTHER_LOOP"
            assert "synchronous facade" in str(refused)

        assert [r.subagent_id for r in await service.journal.unfinished()] == [running.subagent_id]
        assert (await service.status(running)).state is SubagentState.RUNNING  # neither cancelled nor steered
        handle = await service.launch(SubagentLaunchRequest(goal="review", correlation_id="review-1"))
        assert (await service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED


async def test_the_sync_facade_serves_a_thread_running_a_loop_of_its_own(env):
    facade = SubagentLifecycle(env.service)

    async def helper():
        handle = facade.launch(SubagentLaunchRequest(goal="review"))
        assert facade.wait(handle, timeout_seconds=5).state is SubagentState.SUCCEEDED
        return facade.result(handle)

    with env.turn():
        result = await asyncio.to_thread(_on_a_loop_of_its_own, helper)
    assert not isinstance(result, Exception), result
    assert result.summary == "done: review"


async def test_the_sync_facade_still_refuses_the_services_own_loop(env):
    with env.turn(), pytest.raises(SubagentLifecycleError) as refused:
        SubagentLifecycle(env.service).status({"nope": 1})
    assert refused.value.code == "ON_LOOP_THREAD"
