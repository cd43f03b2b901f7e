"""A launch and the commit that journals it: another record's refusal in that commit, a caller that
gives up meanwhile, a service that closes meanwhile (see `Supervisor.submit` and `Journal.sync_launch`)."""

import asyncio
import dataclasses
import sqlite3

import pytest

from lifecycle import SubagentState
from lifecycle._children import ChildSpec
from lifecycle._journal import JournalRecord
from tests.lifecycle.test_service import launch_and_wait, req
from tests.polling import until

S = SubagentState


async def test_a_launch_whose_commit_refused_another_record_is_launched(env, caplog):
    # Every launch of a commit heard any refusal in it: this one, whose row was committed, raised
    # JOURNAL_REJECTED, its child was forgotten, and a restart reported it as interrupted.
    journal = env.service.journal
    await journal.sync()
    journal.put(JournalRecord("sa-bad", "parent-1", None, "{}", "FAILED", 1.0, 1.0, result=object()))
    handle, done, _ = await launch_and_wait(env)  # its launch shares the commit that refuses sa-bad
    assert done.state is S.SUCCEEDED
    assert dict(journal.db.read("SELECT subagent_id, state FROM lifecycle_records")) == {
        handle.subagent_id: "SUCCEEDED"}
    assert "record sa-bad refused and dropped" in caplog.text


async def _abandon_while_its_commit_waits(env, *, alongside=None):
    """Launch while another connection holds the write lock, cancel the caller and wait until its
    second, shielded wait is in the journal (the first one cancelled), with ``alongside`` put to
    share that commit; returns the launching task and the lock's connection, still held."""
    journal = env.service.journal
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
    with env.turn():
        launching = asyncio.ensure_future(env.service.launch(req()))
    await until(lambda: env.service.host_view().children("parent-1"))  # journaled, waiting for the commit
    [child] = env.service.host_view().children("parent-1")
    if alongside is not None:
        journal.put(alongside(await journal.get(child.subagent_id)))
    launching.cancel()
    await until(lambda: len(journal._waiters) == 2)  # the first wait, cancelled, and the second
    return launching, other


async def test_a_launch_abandoned_in_a_commit_that_refused_another_record_ends_interrupted(env):
    # The commit that carried the launch also refused another child's row (it could not be stored):
    # the refusal failed the abandoned launch's second wait too, so its children were forgotten,
    # while their PENDING rows stayed committed, for a restart to report as interrupted.
    journal = env.service.journal
    launching, other = await _abandon_while_its_commit_waits(
        env, alongside=lambda row: dataclasses.replace(row, subagent_id="sa-bad", result=object()))
    other.execute("ROLLBACK")
    other.close()
    with pytest.raises(asyncio.CancelledError):
        await launching
    [row] = journal.db.read("SELECT state, result FROM lifecycle_records")
    assert row[0] == "INTERRUPTED" and "cancelled before start" in row[1]
    [child] = env.service.host_view().recent("parent-1")
    assert child.state is S.INTERRUPTED


async def test_closing_while_a_launch_is_abandoned_ends_its_children_interrupted(env):
    # The service closed its journal while the abandoned launch still waited to hear of its commit:
    # its children stayed PENDING in the journal, held by nothing, and the shielded task failed on
    # a closed journal, unheard.
    journal = env.service.journal
    launching, other = await _abandon_while_its_commit_waits(env)
    closing = asyncio.ensure_future(env.service.close())
    await until(lambda: env.service._supervisor.closed)
    other.execute("ROLLBACK")
    other.close()
    await closing
    with pytest.raises(asyncio.CancelledError):
        await launching
    rows = await asyncio.to_thread(_read, journal.db.path, "SELECT state, result FROM lifecycle_records")
    assert [state for state, _ in rows] == ["INTERRUPTED"]


async def test_an_abandoned_launch_one_of_whose_records_was_refused_forgets_only_that_child(env):
    # Its caller gave up before the commit; the commit refused one child's row (it could not be
    # stored) and wrote its sibling's. Asked again, the journal names the refused child: the launch
    # forgot both, and the sibling's PENDING row stayed, held by nothing.
    journal, view = env.service.journal, env.service.host_view()
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
    launching = asyncio.ensure_future(view.relaunch(env.parent, "turn-1", [ChildSpec("one"), ChildSpec("two")]))
    await until(lambda: len(view.children("parent-1")) == 2)  # journaled, waiting for the commit
    bad, kept = view.children("parent-1")
    journal.put(dataclasses.replace(await journal.get(bad.subagent_id), result=object()))
    launching.cancel()  # its wait is cancelled at once; the task hears it at its next step
    other.execute("ROLLBACK")
    other.close()
    journal.db.commit()  # before the caller wakes to ask again
    with pytest.raises(asyncio.CancelledError):
        await launching
    rows = dict(journal.db.read("SELECT subagent_id, state FROM lifecycle_records"))
    assert rows == {kept.subagent_id: "INTERRUPTED"}
    assert [c.subagent_id for c in view.recent("parent-1")] == [kept.subagent_id]


async def test_an_abandoned_launch_whose_refusal_a_plain_sync_shared_forgets_only_that_child(env):
    # The publisher's plain sync waited on the same commit and took the refusal: asked again, the
    # journal told the launch both rows were written, so the refused child ended INTERRUPTED too
    # (listed, its row refused a second time), though the journal never held it.
    journal, view = env.service.journal, env.service.host_view()
    await journal.sync()
    other = sqlite3.connect(journal.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it
    launching = asyncio.ensure_future(view.relaunch(env.parent, "turn-1", [ChildSpec("one"), ChildSpec("two")]))
    await until(lambda: len(view.children("parent-1")) == 2)  # journaled, waiting for the commit
    bad, kept = view.children("parent-1")
    journal.put(dataclasses.replace(await journal.get(bad.subagent_id), result=object()))
    plain = asyncio.ensure_future(journal.sync())  # as the publisher of finished children waits
    await until(lambda: len(journal._waiters) == 2)
    launching.cancel()  # its wait is cancelled at once; the task hears it at its next step
    other.execute("ROLLBACK")
    other.close()
    journal.db.commit()  # before the caller wakes to ask again
    with pytest.raises(asyncio.CancelledError):
        await launching
    await plain
    rows = dict(journal.db.read("SELECT subagent_id, state FROM lifecycle_records"))
    assert rows == {kept.subagent_id: "INTERRUPTED"}
    assert [c.subagent_id for c in view.recent("parent-1")] == [kept.subagent_id]


def _read(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_a_refusal_the_publisher_hears_is_logged_as_one_not_as_its_children_unjournaled(env, caplog):
    # A refusal no launch owned went to the publisher of finished children, which logged that
    # journaling its own children had failed, with a traceback, though their rows were committed.
    journal = env.service.journal
    await journal.sync()
    journal.put(JournalRecord("sa-bad", "parent-1", None, "{}", "FAILED", 1.0, 1.0, result=object()))
    await launch_and_wait(env)
    assert "the journal refused sa-bad (JOURNAL_REJECTED)" in caplog.text
    assert "finished children failed" not in caplog.text
