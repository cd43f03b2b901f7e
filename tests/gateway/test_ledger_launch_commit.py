"""A background delegation's ledger row commits with its children's PENDING rows, never apart: committed
later, a crash (or a full disk) between the two commits left children that ran, or were relaunched or
reported at the next start, whose results nothing delivered to the chat. A row whose launch was never
recorded is forgotten, not reported."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest

from agent.models.scripted import ScriptedModel
from gateway.store import DelegationRow, LedgerTask
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import BackgroundDispatch, ChildSpec
from lifecycle._dispatch import DispatchedTask
from tests.gateway.test_ledger import BACKGROUND, parent, rows
from tests.polling import until


def children_without_row(path) -> set[str]:
    """The children committed to the file that no committed delegation row names, read as another process would."""
    conn = sqlite3.connect(path)
    try:
        children = {r[0] for r in conn.execute("SELECT subagent_id FROM lifecycle_records")}
        named = {t["subagent_id"] for (tasks,) in conn.execute("SELECT tasks FROM gateway_delegations")
                 for t in json.loads(tasks)}
    finally:
        conn.close()
    return children - named


async def test_no_commit_leaves_a_background_child_without_its_delegation_row(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(), "leaf": lambda r: {"text": f"found {r.metadata['goal']}"}})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    journal = gateway.host.lifecycle.journal
    path = gateway.store.db.path
    unnamed: list[set[str]] = []
    told = journal.committed

    def committed(error):  # what a process killed right after this commit leaves on disk
        told(error)
        if error is None:
            unnamed.append(children_without_row(path))

    journal.committed = committed
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    assert chat.texts() == ["on it", "results: alpha"]
    assert unnamed and not any(unnamed)


async def test_a_row_whose_children_were_never_journaled_is_forgotten_at_the_start_not_reported(tmp_path, gateways):
    # The launch's commit failed for a full disk and the database wrote the row again later, alone (its
    # writes are not lost), before the process died: the chat was told "restarted while subagents were
    # working" about children that never ran, and the row counted against its backlog for good.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=ScriptedModel({"parent": parent()}))
    await chat.say("hello")
    await chat.wait_for(lambda: chat.messages)
    [session] = list(gateway.sessions)
    spec = {"goal": "alpha", "context": "", "role": "leaf", "allowed_toolsets": None, "metadata": {},
            "output_schema": None, "images": [], "route": None, "backend": None}
    gateway.store.delegations.add(DelegationRow("deleg_never", session.key, session.session_id, "turn-x", 1.0,
                                                (LedgerTask(0, "sa-never-journaled", spec),), "running"))
    await settled(gateway)
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    gateway2 = await gateways(make_config(tmp_path, **BACKGROUND), [chat2], model=ScriptedModel({"parent": parent()}))
    await settled(gateway2)
    assert chat2.messages == []
    assert rows(gateway2) == [] and gateway2.store.delegations.get("deleg_never") is None


async def test_the_row_of_a_launch_a_full_disk_rolled_back_is_removed_once_there_is_room(tmp_path, gateways, caplog):
    # The database writes the rolled-back batch again once it can, the row with it: the row must go after it,
    # or it counts against the chat's backlog, and the next start reports children that never ran.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=ScriptedModel({"parent": parent()}))
    await chat.say("hello")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    [session] = list(gateway.sessions)
    db = gateway.store.db
    dispatch = BackgroundDispatch("deleg_lost", session.session_id, "turn-x", 1.0,
                                  (DispatchedTask("sa-lost", ChildSpec(goal="alpha " + "x" * 15_000)),))
    db.write("CREATE TABLE IF NOT EXISTS ballast(x BLOB)")
    await db.durable()
    launched = gateway.ledger.dispatched(dispatch)  # in the batch the children's rows would commit in
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):  # SQLite rolls the batch back, the row with it
        db.write("INSERT INTO ballast VALUES (zeroblob(200000))")
    (pages,) = db._conn.execute("PRAGMA page_count").fetchone()  # the room the row took is taken meanwhile
    db._conn.execute(f"PRAGMA max_page_count={pages}")
    with caplog.at_level(logging.WARNING, logger="gateway.ledger"):
        launched(False)  # the launch was refused: the row cannot be removed yet, the disk being full
    assert any("cannot be removed yet" in m for m in caplog.messages)
    db._conn.execute("PRAGMA max_page_count=1073741823")  # room again, on the connection itself
    await until(lambda: gateway.store.delegations.get("deleg_lost") is None
                and gateway.store.delegations.count_unsettled(session.key) == 0, 15)
    await db.durable()
    conn = sqlite3.connect(db.path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM gateway_delegations WHERE delegation_id='deleg_lost'").fetchone() \
            == (0,)
    finally:
        conn.close()
    assert chat.texts() == ["echo hello"]
