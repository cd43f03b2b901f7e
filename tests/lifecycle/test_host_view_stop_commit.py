"""`HostView.stops_committed`: a host's stop (``/stop``, the operator console's Stop) is told to a person only once
its rows are committed, as a `cancel` is answered: told "stopped" while they were only queued, a process killed
right then left the child running in the journal, for the next start to end INTERRUPTED by process exit, as a lost
one, which ``lifecycle.on_restart: resume`` runs again."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import pytest

from lifecycle import SubagentLaunchRequest, SubagentState
from tests.lifecycle.journal_records import inspect
from tests.lifecycle.test_stop_at_close import tidying_slowly
from tests.polling import until

S = SubagentState
REASON = "stopped by /stop"


async def _in_its_tool(env):
    """A running child that winds down only once the returned event is set: still stopping when the stop is
    answered, as a child in a slow tool is."""
    reached, tidied = tidying_slowly(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[stall-tool]"))
    await reached.wait()
    return handle, tidied


def _stop_reasons(env) -> list[tuple]:
    """Read from a connection of its own: what a crash right now would leave."""
    return inspect(env.service.journal.db.path, "SELECT stop_reason FROM lifecycle_records")


@pytest.mark.parametrize("how", ["children", "turn", "child"])
async def test_a_stop_is_told_committed_only_once_its_commit_has_landed(env, how):
    handle, tidied = await _in_its_tool(env)
    view, journal = env.service.host_view(), env.service.journal
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock: the group commit waits for it
        if how == "children":
            assert await view.interrupt_children("parent-1", REASON) == 1
        elif how == "turn":
            assert await view.interrupt_turn("parent-1", "turn-1", REASON) == 1
        else:
            assert await view.interrupt_child(handle.subagent_id, REASON, parent_session_id="parent-1")
        committed = asyncio.ensure_future(view.stops_committed())
        await until(lambda: journal._waiters)  # waiting for the group commit that carries the stop row
        assert not committed.done()
        assert _stop_reasons(env) == [(None,)]  # a crash now: the child would be lost, and might run again
        other.execute("ROLLBACK")
        assert await asyncio.wait_for(committed, 5) is True
        assert _stop_reasons(env) == [(REASON,)]
    finally:
        tidied.set()  # else, failing, it would hold the close up for good
        other.close()
    with env.turn():
        done = await env.service.wait(handle, timeout_seconds=5)
    assert done.state is S.INTERRUPTED


async def test_a_stop_whose_commit_fails_is_told_not_saved_and_a_later_call_once_it_is(env, caplog):
    handle, tidied = await _in_its_tool(env)
    view, journal = env.service.host_view(), env.service.journal
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock: the commit fails once busy_timeout passes
        journal.db.busy_timeout = 0.05
        assert await view.interrupt_child(handle.subagent_id, REASON)
        with caplog.at_level(logging.ERROR, logger="lifecycle"):
            assert await view.stops_committed() is False  # logged, not raised: the child is being stopped
        assert any("stops were asked, but the journal could not record them yet" in r.getMessage()
                   and "database is locked" in r.getMessage() for r in caplog.records)
        assert _stop_reasons(env) == [(None,)]
        other.execute("ROLLBACK")
        assert await view.stops_committed() is True  # the journal kept the row, and writes it now
        assert _stop_reasons(env) == [(REASON,)]
    finally:
        tidied.set()
        other.close()
    with env.turn():
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.INTERRUPTED


async def test_with_nothing_to_commit_it_answers_at_once_and_after_close_says_not_saved(make_env):
    env = await make_env()
    view = env.service.host_view()
    assert await asyncio.wait_for(view.stops_committed(), 1) is True
    await env.service.close()
    assert await view.stops_committed() is False  # the journal is closed: nothing it could vouch for
