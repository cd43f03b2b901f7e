"""A launch and the commit that journals it: another record's refusal in that commit, a caller that
gives up meanwhile, a service that closes meanwhile (see `Supervisor.submit` and `Journal.sync_launch`)."""

import asyncio
import dataclasses
import json
import sqlite3

import pytest

from agent import ToolContext
from lifecycle import (
    PROCESS_EXIT,
    AsyncSubagentLifecycle,
    JournalError,
    MemoryJournal,
    SubagentLifecycleError,
    SubagentState,
    delegate_tool,
)
from lifecycle._children import ChildSpec
from lifecycle._journal import JournalRecord
from lifecycle._supervisor import LAUNCH_ABANDONED
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


class HeldMemoryJournal(MemoryJournal):
    """A memory journal whose launches' commits (and correlation lookups) wait while the test holds
    them, as those of a journal that takes its time would; ``failing`` refuses the launches let
    through, as a failed commit does (`Journal.sync_launch`)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.waits = 0
        """`sync_launch` calls so far: a launch abandoned while held makes two."""
        self.lookups = 0
        self.failing = False

    async def sync_launch(self, subagent_ids):
        self.waits += 1
        await self.gate.wait()
        if self.failing:
            for sid in subagent_ids:
                self._records.pop(sid, None)
            raise JournalError("Journal write failed: held", code="JOURNAL_WRITE_FAILED")
        await super().sync_launch(subagent_ids)

    async def find_correlation(self, parent_session_id, correlation_id):
        self.lookups += 1
        await self.gate.wait()
        return await super().find_correlation(parent_session_id, correlation_id)


class Held:
    """A started service whose launches' commits the test holds and lets through: the env's, on
    SQLite (another connection holds the write lock), or one on a `HeldMemoryJournal`."""

    def __init__(self, env, kind: str) -> None:
        self.kind = kind
        self.service = env.service if kind == "sqlite" else AsyncSubagentLifecycle(env.service.host, HeldMemoryJournal())
        self.journal = self.service.journal
        self._other = None

    async def hold(self) -> None:
        if self.kind == "memory":
            self.journal.gate.clear()
            return
        await self.journal.sync()
        self._other = sqlite3.connect(self.journal.db.path, isolation_level=None)
        self._other.execute("BEGIN IMMEDIATE")  # the launch's commit must wait for it

    def release(self) -> None:
        if self.kind == "memory":
            self.journal.gate.set()
        elif self._other is not None:
            self._other.execute("ROLLBACK")
            self._other.close()
            self._other = None

    def waits(self) -> int:
        """Waits for a commit so far (the SQLite journal's list keeps a cancelled one until the commit)."""
        return self.journal.waits if self.kind == "memory" else len(self.journal._waiters)

    async def rows(self) -> dict[str, tuple[str, str | None]]:
        """Every record as stored, by id: its state and its result's error message."""
        if self.kind == "memory":
            found = [(r.subagent_id, r.state, r.result) for r in self.journal._records.values()]
        else:  # the service's connection may be closed
            found = await asyncio.to_thread(_read, self.journal.db.path,
                                            "SELECT subagent_id, state, result FROM lifecycle_records")
        return {sid: (state, result and json.loads(result)["error_message"]) for sid, state, result in found}


@pytest.fixture(params=["sqlite", "memory"])
async def held(env, request):
    held = Held(env, request.param)
    if request.param == "memory":
        await held.service.start()
    yield held
    held.release()  # a test that failed holding it
    if request.param == "memory":
        await held.service.close()


async def _launch_held(held, env):
    """A launch of one child waiting for its commit, which the test holds; returns its task and the child's id."""
    await held.hold()
    with env.turn():
        launching = asyncio.ensure_future(held.service.launch(req()))
    [child] = await until(lambda: held.service.host_view().children("parent-1"))
    await until(lambda: held.waits() == 1)
    return launching, child.subagent_id


async def _close_meanwhile(held):
    closing = asyncio.ensure_future(held.service.close())
    await until(lambda: held.service._closed)
    return closing


async def test_close_waits_for_a_launch_being_journaled_whose_child_then_ends_as_at_any_close(held, env):
    # close() closed the journal under a launch still waiting for its commit: on SQLite the launch
    # then failed with 'The journal is not open.', its child left PENDING; on a journal that takes
    # its time, close() returned while the launch went on after it, its child PENDING meanwhile.
    launching, sid = await _launch_held(held, env)
    closing = await _close_meanwhile(held)
    held.release()
    await closing
    assert await held.rows() == {sid: ("INTERRUPTED", PROCESS_EXIT)}  # as close() returned
    with env.turn():
        handle = await launching  # launched: its child ended as every live child ends at close
        result = await held.service.result(handle)
    assert (result.state, result.error_message, handle.subagent_id) == (S.INTERRUPTED, PROCESS_EXIT, sid)


async def test_launches_and_key_changes_while_the_service_closes_are_refused_as_closing(held, env):
    # They were refused with 'The lifecycle service is closed.' while close() still waited for
    # children to end and the journal was still open.
    launching, _ = await _launch_held(held, env)
    closing = await _close_meanwhile(held)
    service = held.service
    tool_ctx = ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1")
    starts = {
        "launch": lambda: service.launch(req("late")),
        "delegate_task": lambda: delegate_tool(service).invoke({"goal": "late"}, tool_ctx),
        "relaunch": lambda: service.host_view().relaunch(env.parent, "turn-1", [ChildSpec("late")]),
        "rotate_key": service.rotate_key,
    }
    for name, start in starts.items():
        with env.turn(), pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closing\.$") as err:
            await start()
        assert err.value.code == "CLOSING", name
    held.release()
    await closing
    await launching
    assert len(await held.rows()) == 1
    with env.turn(), pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$"):
        await service.launch(req("later"))


@pytest.mark.parametrize("order", ["abandoned, then closed", "closing, then abandoned"])
async def test_a_launch_abandoned_as_the_service_closes_ends_as_an_abandoned_launch(held, env, order):
    # Its child ended INTERRUPTED with 'interrupted by process exit', as if it had run, when the
    # service closed first; abandoned once close() had begun, close() did not wait for it at all,
    # and on SQLite closed the journal under it, leaving it PENDING.
    launching, sid = await _launch_held(held, env)
    if order == "abandoned, then closed":
        launching.cancel()
        await until(lambda: held.waits() == 2)  # the first wait, cancelled, and the second
    closing = await _close_meanwhile(held)
    if order == "closing, then abandoned":
        launching.cancel()
        await until(lambda: held.waits() == 2)
    held.release()
    await closing
    assert await held.rows() == {sid: ("INTERRUPTED", LAUNCH_ABANDONED)}
    with pytest.raises(asyncio.CancelledError):
        await launching


@pytest.mark.parametrize("held", ["memory"], indirect=True)
async def test_a_launch_whose_commit_fails_as_the_service_closes_is_refused_whole(held, env):
    launching, _ = await _launch_held(held, env)
    closing = await _close_meanwhile(held)
    held.journal.failing = True
    held.release()
    await closing  # it waited for the launch to be refused, and for nothing else
    with pytest.raises(JournalError) as err:
        await launching
    assert err.value.code == "JOURNAL_WRITE_FAILED"
    assert await held.rows() == {} and held.service.host_view().children("parent-1") == ()


@pytest.mark.parametrize("held", ["memory"], indirect=True)
async def test_a_launch_whose_correlation_lookup_a_close_overtook_is_refused(held, env):
    # The journal's lookup of the correlation id took its time, and close() began and ended
    # meanwhile: the launch went on, journaled its child PENDING and handed it to the closed
    # engine ('the engine is not running'), the child left PENDING for good.
    await held.hold()
    with env.turn():
        launching = asyncio.ensure_future(held.service.launch(req(correlation_id="review-1")))
    await until(lambda: held.journal.lookups == 1)
    await held.service.close()  # nothing is being journaled: it ends at once
    held.release()
    with pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closed\.$") as err:
        await launching
    assert err.value.code == "CLOSED"
    assert await held.rows() == {}


async def test_a_second_close_while_the_first_runs_returns_only_when_it_does(held, env):
    # It returned at once, while the first still waited for a launch being journaled: a caller
    # went on as if every child had ended and the journal were closed.
    launching, sid = await _launch_held(held, env)
    first = await _close_meanwhile(held)
    second = asyncio.ensure_future(held.service.close())
    await asyncio.sleep(0)  # as far as it goes without the launch's commit
    assert not second.done()
    held.release()
    await second
    assert await held.rows() == {sid: ("INTERRUPTED", PROCESS_EXIT)}
    await asyncio.gather(first, launching)


async def test_a_launch_made_as_close_begins_is_refused_as_closing(held, env):
    # The refusal began with the close's own task, a loop step later: a launch in between went ahead.
    closing = asyncio.ensure_future(held.service.close())
    await asyncio.sleep(0)  # close() began; the task it closes in has not run yet
    assert held.service._closed
    with env.turn(), pytest.raises(SubagentLifecycleError, match=r"^The lifecycle service is closing\.$"):
        await held.service.launch(req("as close begins"))
    await closing
    assert await held.rows() == {}


def _stop_hook(env, *, hang: bool = False):
    """A ``subagent_stop`` hook that holds the child's end until its gate opens (for ever with ``hang``:
    until the hook registry gives up on it); returns its entered event and its gate."""
    entered, gate = asyncio.Event(), asyncio.Event()

    async def observe(**event):
        entered.set()
        await (asyncio.Event() if hang else gate).wait()

    env.hooks.register("subagent_stop", observe)
    return entered, gate


async def _stopped_while_journaled_then_given_up(held, env, entered):
    """A launch whose child a stop reached while it was journaled, its caller cancelled once the launch
    was committed, while the child was being finished (its ``subagent_stop`` hook running); returns the
    child's id and a wait for its end that began before."""
    launching, sid = await _launch_held(held, env)
    view = held.service.host_view()
    assert await view.interrupt_children("parent-1", "stopped by the user") == 1
    waiting = asyncio.ensure_future(view.wait_finished([sid]))
    held.release()
    await entered.wait()
    launching.cancel()
    with pytest.raises(asyncio.CancelledError):
        await launching  # it leaves at once: only its own wait was cancelled
    return sid, waiting


async def test_a_child_stopped_while_journaled_ends_though_its_launching_turn_is_cancelled_as_it_ends(held, env):
    # Cancelling the caller cancelled the child's end half-way: already finishing (no stop reached it
    # any more) and without a terminal row, its waiters hung for ever and its row stayed PENDING.
    entered, gate = _stop_hook(env)
    sid, waiting = await _stopped_while_journaled_then_given_up(held, env, entered)
    gate.set()
    await asyncio.wait_for(waiting, 5)
    assert await held.rows() == {sid: ("INTERRUPTED", "stopped by the user")}
    assert held.service.host_view().recent("parent-1")[0].state is S.INTERRUPTED


async def test_close_waits_for_a_stopped_child_whose_launching_turn_was_cancelled_as_it_ended(held, env):
    # Its hook hangs until the registry gives up on it: close() waits for that, and then for its row.
    env.hooks.timeout_seconds = 0.2
    entered, _ = _stop_hook(env, hang=True)
    sid, waiting = await _stopped_while_journaled_then_given_up(held, env, entered)
    await held.service.close()
    assert await held.rows() == {sid: ("INTERRUPTED", "stopped by the user")}
    await asyncio.wait_for(waiting, 5)
