"""Children the service finishes itself (`Supervisor._complete_now`: a queued child stopped or cancelled)
while the caller that stopped them gives up: they end all the same. A launch's own stopped children are
in test_launch_commit.py."""

import asyncio
import sqlite3

import pytest

from lifecycle import SubagentLaunchRequest, SubagentState
from tests.polling import until

S = SubagentState


async def _interrupt(env, handle):
    return await env.service.host_view().interrupt_child(handle.subagent_id, "stopped from the console")


async def _cancel(env, handle):
    with env.turn():  # a plugin's call, in its turn
        return await env.service.cancel(handle, "not needed any more")


async def _held_while_finishing(make_env, stop):
    """A queued child behind a hanging one, being stopped by ``stop`` and held finishing (its
    subagent_stop hook waits for the gate): (env, blocker, queued, the stopping task, the gate)."""
    env = await make_env(max_running=1)
    with env.turn():
        blocker = await env.service.launch(SubagentLaunchRequest(goal="[hang] blocker"))
        queued = await env.service.launch(SubagentLaunchRequest(goal="queued"))
    entered, gate = asyncio.Event(), asyncio.Event()

    async def observe(**event):
        if event["child_session_id"] == queued.subagent_id:
            entered.set()
            await gate.wait()

    env.hooks.register("subagent_stop", observe)
    stopping = asyncio.ensure_future(stop(env, queued))
    await entered.wait()
    return env, blocker, queued, stopping, gate


@pytest.mark.parametrize("stop, state, error", [
    pytest.param(_interrupt, S.INTERRUPTED, "stopped from the console", id="interrupt_child"),
    pytest.param(_cancel, S.CANCELLED, "cancelled before start: not needed any more", id="cancel"),
])
async def test_a_queued_child_stopped_by_a_caller_cancelled_as_it_ends_still_ends(make_env, stop, state, error):
    # The caller (a plugin's turn, an operator's request) was cancelled while the child it withdrew
    # from the queue was being finished (its subagent_stop hook running): that end was cancelled with
    # it, the child left finishing (no stop reached it any more) without a terminal row, its waiters
    # hung for ever and its row stayed PENDING.
    env, blocker, queued, stopping, gate = await _held_while_finishing(make_env, stop)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping  # it leaves at once: only its own wait was cancelled
    gate.set()
    with env.turn():
        done = await env.service.wait(queued, timeout_seconds=5)
        result = await env.service.result(queued)
        await env.service.cancel(blocker)
    assert (done.completed, done.state, result.error_message) == (True, state, error)
    assert (await env.service.journal.get(queued.subagent_id)).state == state.value


@pytest.mark.parametrize("gives_up", [False, True], ids=["caller_waits", "caller_gives_up_during_close"])
@pytest.mark.parametrize("stop, state", [
    pytest.param(_interrupt, S.INTERRUPTED, id="interrupt_child"),
    pytest.param(_cancel, S.CANCELLED, id="cancel"),
])
async def test_close_waits_for_a_queued_child_being_finished_when_it_began(make_env, tmp_path, stop, state, gives_up):
    # The child is finishing (its subagent_stop hook running) when close begins: out of close's reach
    # (it stops only live children), and counted nowhere while its caller waited, so close returned,
    # and the journal closed, before its terminal row was put: it stayed PENDING, and read as
    # interrupted by process exit at the next start. A caller giving up once close was past its count
    # was not waited for either.
    env, blocker, queued, stopping, gate = await _held_while_finishing(make_env, stop)
    closing = asyncio.ensure_future(env.service.close())
    await until(lambda: blocker.subagent_id not in env.service._supervisor._live)  # close stopped it: past its count
    if gives_up:
        stopping.cancel()
    # Time for a close that does not wait to return (and close the journal): the outcome does not
    # depend on it once close waits.
    await asyncio.wait([closing], timeout=0.5)
    gate.set()
    await asyncio.wait_for(closing, 5)
    if not gives_up:
        await asyncio.wait_for(stopping, 5)
    db = sqlite3.connect(tmp_path / "journal.db")
    try:
        (row_state,) = db.execute("SELECT state FROM lifecycle_records WHERE subagent_id = ?",
                                  (queued.subagent_id,)).fetchone()
    finally:
        db.close()
    assert row_state == state.value
