"""An event whose handling the state database refuses (a full disk, `platforms.not_recorded.storage_refusal`)
is not charged for it: the event is fine, so it is not counted a failed attempt (after ``inbox.max_attempts``
it would be set aside with an apology), and it is handled once the store can write again, without a
restart. ``PRAGMA max_page_count`` on the gateway's live connection makes SQLite refuse with SQLITE_FULL
exactly as a full disk does; raising it again is the room an operator frees."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import pytest

from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY
from gateway.store import session_key
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import attempts_of, echo
from tests.sqlite_errors import full_disk

ROOM = "PRAGMA max_page_count=1073741823"


def pages(db) -> int:
    # On the connection itself: a read through the store would write a lost batch again first.
    (count,) = db._conn.execute("PRAGMA page_count").fetchone()
    return count


async def test_a_message_the_full_disk_keeps_from_being_handled_is_not_charged_and_is_answered_once_there_is_room(
        tmp_path, gateways, caplog):
    # Before, the refusal counted as a failed attempt: with one attempt allowed, the message was set aside
    # as a dead letter at once and its chat told it could not be handled, although nothing was wrong with it.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], clock=clock,
                             script={"parent": echo})
    db = gateway.store.db
    db.write("CREATE TABLE ballast(x BLOB)")
    await db.durable()
    # A new chat's session needs room the disk no longer has; the event's own row still fits.
    db._conn.execute("CREATE TEMP TRIGGER no_room AFTER INSERT ON main.gateway_sessions"
                     " BEGIN INSERT INTO ballast VALUES (zeroblob(100000)); END")
    db._conn.execute(f"PRAGMA max_page_count={pages(db) + 4}")
    accepted = await chat.say("hello", chat="c9", event_id="ev-1")
    assert not accepted.duplicate
    for pause in (0.5, 1.0):  # tried again after a pause that doubles, for as long as the store refuses
        await clock.until_sleeping(lasting=pause)
        assert chat.messages == [] and gateway.store.dead_letters.all() == []
        clock.advance(pause)
    await clock.until_sleeping(lasting=2.0)
    db._conn.execute("DROP TRIGGER no_room")
    db._conn.execute(ROOM)
    clock.advance(2.0)
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    assert APOLOGY not in chat.texts() and gateway.store.dead_letters.all() == []
    assert gateway.store.inbox.settled("chat", "ev-1")
    await gateway.stop(grace=0)
    assert attempts_of(tmp_path, "ev-1") == 0
    warnings = [r for r in caplog.records if r.name == "gateway.dead_letters" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None  # said once, not once per try
    assert "not counted as a failed attempt" in warnings[0].getMessage()


async def test_a_message_waiting_for_its_chat_whose_commit_the_full_disk_refuses_is_handled_in_its_turn(
        tmp_path, gateways, caplog):
    # A message handed over while an earlier event of its chat is being handled (a /new waiting for the hooks
    # of the children it withdraws) is committed before it waits. Before, a commit the full disk refused
    # raised out of that wait as a failure of the event: counted (set aside, with one attempt allowed), or,
    # its counting refused too, raised to the platform as not recorded, whose redelivery is then a duplicate:
    # the message was answered by no one until the next start.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], script={"parent": echo})
    db = gateway.store.db
    db.write("CREATE TABLE ballast(x BLOB)")
    await chat.say("first", event_id="ev-0")
    await chat.wait_for(lambda: chat.texts() == ["re: first"])
    await settled(gateway)

    async def nothing() -> None:
        pass

    earlier = gateway._intake.turn(session_key("chat", "c1", None), nothing)  # the chat's event being handled
    await earlier.__aenter__()
    say = asyncio.ensure_future(chat.say("hello", event_id="ev-1"))
    await asyncio.sleep(0)
    assert db._conn.in_transaction  # recorded, its commit due at the next loop turn, which it waits for
    # The batch is rolled back for a full disk, and its room taken before it can be written again.
    db.write("INSERT INTO ballast VALUES (zeroblob(20000))")
    db._conn.execute(f"PRAGMA max_page_count={pages(db)}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        db.write("INSERT INTO ballast VALUES (zeroblob(20000))")
    db._conn.execute(f"PRAGMA max_page_count={pages(db)}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        await db.durable()  # the commit the message waited for is refused too
    db._conn.execute(ROOM)
    await earlier.__aexit__(None, None, None)
    accepted = await say
    assert not accepted.duplicate and accepted.turn_id is not None
    await chat.wait_for(lambda: chat.texts() == ["re: first", "re: hello"])
    await settled(gateway)
    assert gateway.store.dead_letters.all() == [] and gateway.store.inbox.settled("chat", "ev-1")
    assert not any(r.name == "gateway.dead_letters" for r in caplog.records)  # handled in its turn, not later
    await gateway.stop(grace=0)
    assert attempts_of(tmp_path, "ev-1") == 0


async def test_a_failing_message_whose_failure_the_full_disk_refuses_to_count_is_tried_again(tmp_path, gateways):
    # Before, the refused count raised out of the intake: the platform was told the message was not recorded,
    # though it was, and its redelivery was dropped as a duplicate: handled by no one until the next start.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock, script={"parent": echo})
    save, failed = gateway.store.sessions.save, gateway.store.inbox.failed

    def broken(row):
        raise RuntimeError("a bug meets this chat")

    def refused(*args):
        raise full_disk()

    gateway.store.sessions.save, gateway.store.inbox.failed = broken, refused
    accepted = await chat.say("hello", chat="c9", event_id="ev-1")
    assert not accepted.duplicate
    await clock.until_sleeping(lasting=0.5)
    gateway.store.sessions.save, gateway.store.inbox.failed = save, failed  # the bug gone, room again
    clock.advance(0.5)
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-1") and gateway.store.dead_letters.all() == []
