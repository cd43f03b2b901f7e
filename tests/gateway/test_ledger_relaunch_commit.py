"""Children launched again (``/retry``, ``/agents retry``, a restart with ``on_restart: resume``) commit with
their delegation's record, never apart: recorded in a later commit, a crash (or a full disk) between the two
left children running whose results nothing delivered, or a row naming children that never ran. A launch that
does not commit undoes the record it carried: a new delegation is removed, a delegation taken up after a restart
is pointed back at the children the restart lost, for the next start to relaunch or report."""

from __future__ import annotations

import json
import sqlite3

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import SubagentLifecycleError
from lifecycle._sqlite_journal import SqliteJournal
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_ledger import BACKGROUND
from tests.polling import until

BETA = "beta " + "x" * 12_000
"""A goal that takes pages of its own (in the journal's row of its child, and in its delegation's row): the
commit carrying it cannot fit in a full file."""
TASKS = {"tasks": [{"goal": "alpha"}, {"goal": BETA}]}
NOT_RETRIED = ("Nothing was retried: the state database cannot be written right now, so the retry could not be "
               "recorded, and nothing of it runs. Send {command} again later.")
NO_ROOM = 1_073_741_823


def parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "user" and content.startswith("[Background delegation results]"):
        return {"text": "results: " + ("fine at last" if "fine at last" in content else "?")}
    if last["role"] == "user" and "delegate" in content:
        return {"tool_calls": [{"name": "delegate_task", "arguments": TASKS}]}
    if last["role"] == "tool":
        return {"text": "on it"}
    return {"text": f"echo {content}"}


def beta_fails_once() -> ScriptedModel:
    betas = []

    def leaf(request: ModelRequest) -> dict:
        if request.metadata["goal"] != BETA:
            return {"text": "fine"}
        betas.append(request)
        return {"error": "server_error", "message": "model exploded"} if len(betas) == 1 else {"text": "fine at last"}

    return ScriptedModel({"parent": parent, "leaf": leaf})


async def beta_failed(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=beta_fails_once())
    await chat.say("please delegate")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    gateway.store.db.write("CREATE TABLE IF NOT EXISTS ballast(x BLOB)")  # what fills the disk (`FullAtRelaunch`)
    await gateway.store.db.durable()
    return chat, gateway


def unmatched(path) -> tuple[set[str], set[str]]:
    """As another process reads the file: (children not finished that no delegation names, children a
    delegation names that are not in the journal)."""
    conn = sqlite3.connect(path)
    try:
        unfinished = {r[0] for r in conn.execute(
            "SELECT subagent_id FROM lifecycle_records WHERE state IN ('PENDING', 'STARTING', 'RUNNING')")}
        journaled = {r[0] for r in conn.execute("SELECT subagent_id FROM lifecycle_records")}
        named = {t["subagent_id"] for (tasks,) in conn.execute("SELECT tasks FROM gateway_delegations")
                 for t in json.loads(tasks)}
    finally:
        conn.close()
    return unfinished - named, named - journaled


def check_every_commit(journal, path) -> list[tuple[set[str], set[str]]]:
    """What a process killed right after each of the journal's commits from now on leaves on disk."""
    seen: list[tuple[set[str], set[str]]] = []
    told = journal.committed

    def committed(error):
        told(error)
        if error is None:
            seen.append(unmatched(path))

    journal.committed = committed
    return seen


class FullAtRelaunch:
    """The gateway's view of its children, but the disk fills up once a relaunch's record is written into its
    batch: SQLite rolls the batch back, and the commit of the children's PENDING rows fails, as a full disk's
    does. Room comes back as the launch fails."""

    def __init__(self, view, db) -> None:
        self._view, self._db = view, db

    def __getattr__(self, name):
        return getattr(self._view, name)

    async def relaunch(self, parent, turn_id, specs, *, before_commit=None):
        conn = self._db._conn

        def filling(ids):
            before_commit(ids)
            (pages,) = conn.execute("PRAGMA page_count").fetchone()
            conn.execute(f"PRAGMA max_page_count={pages}")
            try:
                self._db.write("INSERT INTO ballast VALUES (zeroblob(200000))")
            except sqlite3.OperationalError:
                pass  # full: the batch, the record in it, is rolled back
            else:
                raise AssertionError("the ballast fitted")
            (pages,) = conn.execute("PRAGMA page_count").fetchone()  # the room the record took is taken meanwhile
            conn.execute(f"PRAGMA max_page_count={pages}")

        try:
            return await self._view.relaunch(parent, turn_id, specs, before_commit=filling)
        finally:
            self._db._conn.execute(f"PRAGMA max_page_count={NO_ROOM}")


async def test_a_retry_commits_its_delegation_with_its_children(tmp_path, gateways):
    chat, gateway = await beta_failed(tmp_path, gateways)
    seen = check_every_commit(gateway.host.lifecycle.journal, gateway.store.db.path)
    await chat.say("/retry")
    await chat.wait_for(lambda: len(chat.texts("completion")) == 2)
    await settled(gateway)
    assert chat.texts("command") == [f"Retrying 1 subagent: {BETA[:59]}…. The results will follow."]
    assert chat.texts("completion")[1] == "results: fine at last"
    assert seen and seen == [(set(), set())] * len(seen)


async def test_an_agents_retry_commits_its_delegation_with_its_child(tmp_path, gateways):
    chat, gateway = await beta_failed(tmp_path, gateways)
    session = next(iter(gateway.sessions))
    (row,) = gateway.ledger.latest(session, 1)
    beta = row.tasks[1].subagent_id
    seen = check_every_commit(gateway.host.lifecycle.journal, gateway.store.db.path)
    await chat.say(f"/agents retry {beta}")
    await chat.wait_for(lambda: len(chat.texts("completion")) == 2)
    await settled(gateway)
    assert chat.texts("command")[0].startswith(f"Retrying {beta} as sa-")
    assert seen and seen == [(set(), set())] * len(seen)


async def test_children_resumed_after_a_restart_commit_with_their_delegation(tmp_path, gateways, monkeypatch):
    resume = {**BACKGROUND, "lifecycle": {"on_restart": "resume"}}
    chat = RecordingAdapter()
    waiting = ScriptedModel({"parent": parent, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **resume), [chat], model=waiting)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await until(lambda: sum(1 for r in waiting.requests if r.role == "leaf") == 2)
    path = gateway.store.db.path
    await gateway.stop(grace=0)

    seen: list[tuple[set[str], set[str]]] = []
    told = SqliteJournal.committed

    def committed(journal, error):  # the journal is made and resumes inside the start
        told(journal, error)
        if error is None:
            seen.append(unmatched(path))

    monkeypatch.setattr(SqliteJournal, "committed", committed)
    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": parent, "leaf": lambda r: {"text": "fine at last"}})
    gateway2 = await gateways(make_config(tmp_path, **resume), [chat2], model=model2)
    await chat2.wait_for(lambda: chat2.texts("completion"))
    await settled(gateway2)
    assert chat2.texts() == ["results: fine at last"]
    assert sorted(r.metadata["goal"] for r in model2.requests if r.role == "leaf") == ["alpha", BETA]
    assert seen and seen == [(set(), set())] * len(seen)


async def test_a_retry_a_full_disk_did_not_launch_leaves_no_delegation(tmp_path, gateways):
    # The rolled-back batch is written again once there is room, the retry's row with it: left, it would name a
    # child that never ran, count against the chat's backlog, and be reported interrupted at the next start.
    chat, gateway = await beta_failed(tmp_path, gateways)
    session = next(iter(gateway.sessions))
    (row,) = gateway.ledger.latest(session, 1)
    db = gateway.store.db
    gateway.ledger._children = FullAtRelaunch(gateway.ledger._children, db)
    await chat.say("/retry")
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == [NOT_RETRIED.format(command="/retry")]
    await settled(gateway)
    await db.durable()
    assert gateway.ledger.latest(session, 5) == [row]
    assert unmatched(db.path) == (set(), set())
    with sqlite3.connect(db.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM gateway_delegations").fetchone() == (1,)

    gateway.ledger._children = gateway.ledger._children._view  # room again: the same /retry runs it
    await chat.say("/retry")
    await chat.wait_for(lambda: len(chat.texts("completion")) == 2)
    assert chat.texts("command")[1] == f"Retrying 1 subagent: {BETA[:59]}…. The results will follow."


async def test_a_relaunch_in_place_a_full_disk_did_not_launch_points_its_row_back_at_the_lost_children(
        tmp_path, gateways):
    # The rolled-back batch is written again once there is room, the row pointed at the new children with it:
    # left so, the next start would find none of them in the journal, take the delegation for one never launched
    # and forget it without a word to the chat (or relaunch children that never ran, as lost ones).
    chat, gateway = await beta_failed(tmp_path, gateways)
    session = next(iter(gateway.sessions))
    (row,) = gateway.ledger.latest(session, 1)
    db = gateway.store.db
    ledger = gateway.ledger
    ledger._children = FullAtRelaunch(ledger._children, db)
    with pytest.raises(SubagentLifecycleError, match="Not launched"):
        await ledger._relaunch(session, row, [row.tasks[1]])  # as a start taking it up after a restart would
    await until(lambda: not ledger._aside)
    await db.durable()
    with sqlite3.connect(db.path) as conn:
        (tasks,) = conn.execute("SELECT tasks FROM gateway_delegations WHERE delegation_id=?",
                                (row.delegation_id,)).fetchone()
    assert [(t["subagent_id"], t["attempts"]) for t in json.loads(tasks)] == [(t.subagent_id, t.attempts)
                                                                               for t in row.tasks]
    assert ledger._table.get(row.delegation_id) == row
    assert unmatched(db.path) == (set(), set())


@pytest.mark.parametrize("command", ["/retry", "/agents retry"])
async def test_a_retry_whose_process_died_before_it_answered_runs_its_task_once_after_the_restart(
        tmp_path, gateways, command):
    # Its launch and its delegation committed together, its answer not: the command is handled again after the
    # restart, and the delegation it recorded is one the restart left, its child lost. Run again beside it, the
    # start relaunched (or reported) that one too: the task ran twice, and the chat got its results twice.
    resume = {**BACKGROUND, "lifecycle": {"on_restart": "resume"}}
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **resume), [chat], model=beta_fails_once())
    await chat.say("please delegate")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    session = next(iter(gateway.sessions))
    (row,) = gateway.ledger.latest(session, 1)
    beta = row.tasks[1].subagent_id
    journal = gateway.host.lifecycle.journal
    real_sync = journal.sync_launch
    killed = []

    async def dying_after_the_launch(subagent_ids):
        await real_sync(subagent_ids)
        killed.append(killed_now(tmp_path))  # the process dies before the command's answer is journaled

    journal.sync_launch = dying_after_the_launch
    said = command if command == "/retry" else f"{command} {beta}"
    await chat.say(said)
    await chat.wait_for(lambda: chat.texts("command"))
    await gateway.stop(grace=0)
    [restore] = killed
    restore()

    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": parent, "leaf": lambda r: {"text": "fine at last"}})
    gateway2 = await gateways(make_config(tmp_path, **resume), [chat2], model=model2)
    await chat2.wait_for(lambda: "completion" in chat2.kinds())
    await settled(gateway2)
    assert chat2.kinds() == ["command", "completion"]
    assert chat2.texts("completion") == ["results: fine at last"]
    assert [r.metadata["goal"] for r in model2.requests if r.role == "leaf"] == [BETA]
    assert gateway2.store.delegations.running() == []
