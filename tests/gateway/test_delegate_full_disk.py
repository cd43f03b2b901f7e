"""A background delegate_task while the state database is full, through the whole gateway: the
parent (the openai provider against a fake server) delegates after the disk filled, mid-turn."""

from __future__ import annotations

import sqlite3

import pytest

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, is_child, openai_model, parent_requests, tool_results


async def test_a_delegation_the_full_disk_refused_tells_the_model_plainly_and_leaves_no_child(tmp_path, llm, gateways):
    server = await llm()
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), delegation={"gateway_mode": "background"})
    gateway = await gateways(config, [chat])
    db = gateway.store.db

    def play(body: dict) -> dict:
        if is_child(body):
            return {"text": "a child ran"}
        if body["messages"][-1]["role"] == "tool":
            db.read("PRAGMA max_page_count=1073741823")  # room again, before the reply is journaled
            return {"text": "could not start it"}
        (pages,) = db.read_one("PRAGMA page_count")
        db.read(f"PRAGMA max_page_count={pages}")  # the disk fills while the turn runs
        return call("delegate_task", {"goal": "summarise the report " + "x" * 8_000})

    server.respond_with(play)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "reply" in chat.kinds(), timeout=30)
    [told] = tool_results(parent_requests(server)[-1])
    assert told.startswith("Error: No subagent was started: the state database cannot be written right now")
    assert "Journal" not in told and "OperationalError" not in told and str(tmp_path) not in told
    assert chat.texts("reply") == ["could not start it"]
    session = next(iter(gateway.sessions))
    assert gateway.host.children.children(session.session_id) == ()
    assert gateway.store.delegations.count_unsettled(session.key) == 0
    await settled(gateway)
    assert await gateway.host.lifecycle.journal.unfinished() == []  # a restart would find no child to interrupt


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
        lose_the_batch_for_good(db)  # the backlog guard's count of the chat's waiting results now raises
        return call("delegate_task", {"goal": "summarise the report"})

    server.respond_with(play)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "reply" in chat.kinds(), timeout=30)
    [told] = tool_results(parent_requests(server)[-1])
    assert told.startswith("Error: No subagent was started: the state database cannot be written right now")
    assert "OperationalError" not in told and "failed" not in told
    assert chat.texts("reply") == ["could not start it"]
    session = next(iter(gateway.sessions))
    assert gateway.host.children.children(session.session_id) == ()
    await settled(gateway)
    assert gateway.store.delegations.count_unsettled(session.key) == 0
    assert await gateway.host.lifecycle.journal.unfinished() == []
