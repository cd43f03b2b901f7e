"""A cancel of a child still queued behind ``max_running`` is answered once its stop is committed, as a running
child's is (test_cancel_commit.py): its end alone was published even when its commit failed, and was only held
while the service started, so "accepted" came with the row still PENDING, for a crash to leave INTERRUPTED."""

from __future__ import annotations

import sqlite3

import pytest

from lifecycle import JournalError, SubagentLaunchRequest, SubagentState
from tests.lifecycle.journal_records import inspect

S = SubagentState


async def _queued(env):
    with env.turn():
        await env.service.launch(SubagentLaunchRequest(goal="[hang] holds the only slot"))
        return await env.service.launch(SubagentLaunchRequest(goal="waits for a slot"))


def _row(env, handle):
    return inspect(env.service.journal.db.path, "SELECT state, stop_reason FROM lifecycle_records"
                   f" WHERE subagent_id = '{handle.subagent_id}'")


async def test_a_cancel_of_a_queued_child_whose_commit_fails_says_so(make_env):
    env = await make_env(max_running=1)
    queued = await _queued(env)
    journal = env.service.journal
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock: the stop's commit fails once busy_timeout passes
        journal.db.busy_timeout = 0.05
        with env.turn(), pytest.raises(JournalError) as failed:
            await env.service.cancel(queued, reason="no longer needed")
        assert failed.value.code == "JOURNAL_WRITE_FAILED"
        assert str(failed.value).startswith(f"The cancel of {queued.subagent_id} was asked")
        assert _row(env, queued) == [("PENDING", None)]  # what a crash now would leave: not "accepted"
    finally:
        other.execute("ROLLBACK")
        other.close()
    await journal.sync()  # the journal kept the rows, and writes them once it can
    assert _row(env, queued)[0][0] == "CANCELLED"


async def test_a_cancel_of_a_queued_child_while_the_service_starts_is_committed_when_answered(make_env):
    env = await make_env(max_running=1, hold_ends=True)  # ends held until `release_ends`: plugins loading
    queued = await _queued(env)
    with env.turn():
        answer = await env.service.cancel(queued, reason="no longer needed")
    assert answer.accepted
    assert _row(env, queued) == [("CANCEL_REQUESTED", "no longer needed")]
    await env.service.release_ends()
    with env.turn():
        result = await env.service.result(queued)
    assert (result.state, result.error_message) == (S.CANCELLED, "cancelled before start: no longer needed")
    assert _row(env, queued)[0][0] == "CANCELLED"



async def test_a_queued_child_stopped_while_the_service_starts_has_its_stop_committed_when_told(make_env):
    # Its end held until `release_ends`, its row stayed PENDING while `stops_committed` said True: a host told
    # the person "stopped", and a crash then left the child INTERRUPTED by process exit, to be run again.
    env = await make_env(max_running=1, hold_ends=True)
    queued = await _queued(env)
    view = env.service.host_view()
    assert await view.interrupt_child(queued.subagent_id, "stopped by /stop")
    assert await view.stops_committed()
    assert _row(env, queued) == [("PENDING", "stopped by /stop")]
    await env.service.release_ends()
    with env.turn():
        result = await env.service.result(queued)
    assert (result.state, result.error_message) == (S.INTERRUPTED, "stopped by /stop")
    assert _row(env, queued)[0][0] == "INTERRUPTED"
