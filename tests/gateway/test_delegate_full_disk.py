"""A background delegate_task while the state database is full, through the whole gateway: the
parent (the openai provider against a fake server) delegates after the disk filled, mid-turn."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, is_child, openai_model, parent_requests, tool_results

REFUSED = "Error: No subagent was started: the state database cannot be written right now"


async def delegated_as_the_disk_fills(tmp_path, llm, gateways, fill: Callable[[object], None], goal: str):
    """A turn that delegates once ``fill(db)`` has filled the disk, and gives room back (on the
    connection itself, see `lose_the_batch_for_good`) before its reply is journaled. Returns what the
    tool told the model, once the chat got the reply, no child started and nothing is left unsettled."""
    server = await llm()
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), delegation={"gateway_mode": "background"})
    gateway = await gateways(config, [chat])
    db = gateway.store.db

    def play(body: dict) -> dict:
        if is_child(body):
            return {"text": "a child ran"}
        if body["messages"][-1]["role"] == "tool":
            db._conn.execute("PRAGMA max_page_count=1073741823")  # room again, before the reply is journaled
            return {"text": "could not start it"}
        fill(db)
        return call("delegate_task", {"goal": goal})

    server.respond_with(play)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "reply" in chat.kinds(), timeout=30)
    [told] = tool_results(parent_requests(server)[-1])
    assert chat.texts("reply") == ["could not start it"]
    session = next(iter(gateway.sessions))
    assert gateway.host.children.children(session.session_id) == ()
    await settled(gateway)
    assert gateway.store.delegations.count_unsettled(session.key) == 0
    assert await gateway.host.lifecycle.journal.unfinished() == []  # a restart would find no child to interrupt
    return told


def fill_while_the_turn_runs(db) -> None:
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")


async def test_a_delegation_the_full_disk_refused_tells_the_model_plainly_and_leaves_no_child(tmp_path, llm, gateways):
    told = await delegated_as_the_disk_fills(tmp_path, llm, gateways, fill_while_the_turn_runs,
                                             "summarise the report " + "x" * 8_000)
    assert told.startswith(REFUSED)
    assert "Journal" not in told and "OperationalError" not in told and str(tmp_path) not in told


def lose_the_batch_for_good(db) -> None:
    """SQLite rolls the open batch back for a full disk, and the room it gave back is taken before it
    is written again (as on a disk other files share): until there is room, every read of the
    database raises, since it writes the lost batch again first."""
    db.write("CREATE TABLE IF NOT EXISTS ballast(x BLOB)")
    db.write("INSERT INTO ballast VALUES (zeroblob(20000))")
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        db.write("INSERT INTO ballast VALUES (zeroblob(20000))")
    # On the connection itself: a read through db would write the lost batch again first.
    (pages,) = db._conn.execute("PRAGMA page_count").fetchone()
    db._conn.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        db.read("SELECT 1")


async def test_a_backlog_the_full_disk_keeps_from_being_counted_is_a_launch_refused_not_a_tool_crash(
        tmp_path, llm, gateways):
    # The backlog guard's count of the chat's waiting results raises once the batch is lost.
    told = await delegated_as_the_disk_fills(tmp_path, llm, gateways, lose_the_batch_for_good, "summarise the report")
    assert told.startswith(REFUSED)
    assert "OperationalError" not in told and "failed" not in told
