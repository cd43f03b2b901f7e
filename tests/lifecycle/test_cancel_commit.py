"""`cancel` answers once its stop is committed: a process that dies right after the answer leaves the child to end
CANCELLED at the next start, as the caller was told, not INTERRUPTED as a lost one (see `Supervisor.cancel`)."""

from __future__ import annotations

import sqlite3

import pytest

from lifecycle import JournalError, SubagentLaunchRequest, SubagentState
from tests.lifecycle.journal_records import inspect
from tests.lifecycle.test_stop_at_close import tidying_slowly
from tests.polling import until

S = SubagentState


async def _running(env):
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[hang]"))
    await until(lambda: len(env.child_model.requests) >= 2)  # in its model call
    return handle


@pytest.mark.both_engines
async def test_an_accepted_cancel_is_committed_when_it_is_answered(env):
    # It answered with the stop only queued: a crash then left the row PENDING, and the child INTERRUPTED.
    handle = await _running(env)
    path = env.service.journal.db.path
    with env.turn():
        answer = await env.service.cancel(handle, reason="no longer needed")
        assert answer.accepted
        # Read from a connection of its own: what a crash right now would leave.
        assert inspect(path, "SELECT state, stop_reason FROM lifecycle_records") == [
            ("CANCEL_REQUESTED", "no longer needed")]
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.CANCELLED


async def test_a_cancel_whose_commit_fails_says_so_and_a_second_one_answers_once_it_is_written(env):
    reached, tidied = tidying_slowly(env)  # it winds down only when told: still stopping at the second cancel
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[stall-tool]"))
    await reached.wait()
    journal = env.service.journal
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock: the stop's commit fails once busy_timeout passes
        journal.db.busy_timeout = 0.05
        with env.turn(), pytest.raises(JournalError) as failed:
            await env.service.cancel(handle, reason="no longer needed")
        assert failed.value.code == "JOURNAL_WRITE_FAILED"
        assert str(failed.value).startswith(f"The cancel of {handle.subagent_id} was asked, but the journal could"
                                            " not record it yet")
        assert "database is locked" in str(failed.value)
        other.execute("ROLLBACK")
        with env.turn():
            again = await env.service.cancel(handle, reason="no longer needed")
            assert (again.accepted, again.state) == (True, S.CANCEL_REQUESTED)
            assert inspect(journal.db.path, "SELECT state FROM lifecycle_records") == [("CANCEL_REQUESTED",)]
            tidied.set()
            done = await env.service.wait(handle, timeout_seconds=5)
        assert done.state is S.CANCELLED  # stopped all the same
    finally:
        tidied.set()  # else, failing, it would hold the close up for good
        other.close()
