"""The plugin API's answers to a handle it cannot honour, pinned letter by letter as docs/lifecycle.md quotes them:
a plugin matches on these fields and texts, so a reworded message or a flipped flag breaks it silently."""

from __future__ import annotations

import pytest

from agent import AgentSession
from lifecycle import (
    NOT_READY,
    RECONNECT_UNAVAILABLE,
    UNKNOWN_HANDLE,
    SubagentCancelResult,
    SubagentLaunchRequest,
    SubagentReconnectResult,
    SubagentState,
)

S = SubagentState

GARBAGE = [None, 5, "sa-1", [], {}, {"subagent_id": "sa-1"}, object()]


@pytest.mark.parametrize("bad", GARBAGE, ids=lambda value: type(value).__name__)
async def test_every_read_of_garbage_answers_unknown_in_the_documented_words(env, bad):
    service = env.service
    with env.turn():
        status = await service.status(bad)
        assert (status.state, status.diagnostic) == (S.UNKNOWN, UNKNOWN_HANDLE)
        waited = await service.wait(bad, timeout_seconds=5)
        assert (waited.state, waited.completed, waited.timed_out, waited.diagnostic) == (
            S.UNKNOWN, True, False, UNKNOWN_HANDLE)
        result = await service.result(bad)
        assert (result.state, result.ready, result.error_classification) == (S.UNKNOWN, False, UNKNOWN_HANDLE)
        assert await service.cancel(bad) == SubagentCancelResult(
            False, S.UNKNOWN, already_terminal=False, unknown_handle=True, message="Unknown subagent handle.")
        assert await service.reconnect(bad) == SubagentReconnectResult(False, S.UNKNOWN, RECONNECT_UNAVAILABLE)
        assert await service.steer(bad, "hello") is False


async def test_another_sessions_handle_reads_as_unknown_and_its_child_is_untouched(env):
    service = env.service
    with env.turn():
        handle = await service.launch(SubagentLaunchRequest(goal="[hang] mine"))
        assert (await service.result(handle)).error_classification == NOT_READY
    with env.turn(AgentSession(model=env.parent.model, session_id="someone-else")):
        for shown in (handle, handle.to_dict()):
            assert (await service.status(shown)).diagnostic == UNKNOWN_HANDLE
            assert (await service.result(shown)).error_classification == UNKNOWN_HANDLE
            cancelled = await service.cancel(shown)
            assert (cancelled.accepted, cancelled.unknown_handle, cancelled.message) == (
                False, True, "Unknown subagent handle.")
    with env.turn():
        assert (await service.status(handle)).state in (S.PENDING, S.STARTING, S.RUNNING)
        assert (await service.cancel(handle)).accepted
        assert (await service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        again = await service.cancel(handle)
        assert (again.accepted, again.already_terminal, again.state, again.message) == (
            False, True, S.CANCELLED, "The subagent already finished (CANCELLED).")
        # a wait after the result was read answers as before: the result is final
        first = await service.result(handle)
        assert (await service.wait(handle, timeout_seconds=0)).completed
        assert await service.result(handle) == first
