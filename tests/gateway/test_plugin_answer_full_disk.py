"""A plugin command whose answer the state database refuses to journal (a full disk) keeps the answer its
handler gave and journals it once there is room: its handler is not run again (what it did, done twice), nor
is the refusal counted against the command (set aside with an apology after ``inbox.max_attempts``)."""

from __future__ import annotations

import logging

from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import attempts_of
from tests.gateway.test_intake_full_disk import ROOM, pages
from tests.plugin_modules import plugin_module

PLUGIN = """\
runs = []

async def report(args, context):
    runs.append(args)
    return "reported"

def register(ctx):
    ctx.register_command("report", report)
"""


async def test_a_plugin_answer_the_full_disk_refuses_is_journaled_later_without_running_the_handler_again(
        tmp_path, gateways, monkeypatch, caplog):
    plugin = plugin_module(tmp_path, monkeypatch, "reporting_plugin", PLUGIN)
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, plugins=["reporting_plugin"], inbox={"max_attempts": 2}), [chat],
                             clock=clock, script={"parent": [[{"text": "x"}]]})
    db = gateway.store.db
    db.write("CREATE TABLE ballast(x BLOB)")
    await db.durable()
    # The answer's row needs room the disk no longer has; the event's own rows still fit.
    db._conn.execute("CREATE TEMP TRIGGER no_room AFTER INSERT ON main.gateway_outbox WHEN NEW.key LIKE"
                     " 'cmd-chat-ev-report:%' BEGIN INSERT INTO ballast VALUES (zeroblob(100000)); END")
    db._conn.execute(f"PRAGMA max_page_count={pages(db) + 4}")
    await chat.say("/report now", event_id="ev-report")
    for pause in (FIRST_PAUSE_SECONDS, 2 * FIRST_PAUSE_SECONDS):  # tried again for as long as the store refuses
        await clock.until_sleeping(lasting=pause)
        assert chat.messages == [] and gateway.store.dead_letters.all() == []
        clock.advance(pause)
    await clock.until_sleeping(lasting=4 * FIRST_PAUSE_SECONDS)
    db._conn.execute("DROP TRIGGER no_room")
    db._conn.execute(ROOM)
    clock.advance(4 * FIRST_PAUSE_SECONDS)
    await chat.wait_for(lambda: chat.texts() == ["reported"])
    await settled(gateway)
    assert plugin.runs == ["now"]  # the handler ran once
    assert APOLOGY not in chat.texts() and gateway.store.dead_letters.all() == []
    assert gateway.store.inbox.settled("chat", "ev-report")
    await gateway.stop(grace=0)
    assert attempts_of(tmp_path, "ev-report") == 0
    warnings = [r for r in caplog.records if r.name == "gateway.app" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "not run again" in warnings[0].getMessage()  # said once, not once per try


async def test_a_plugin_answer_that_fails_while_the_full_disk_refuses_its_count_is_kept_for_the_next_start(
        tmp_path, gateways, monkeypatch, caplog):
    # Before, the count's refusal was raised out of the command's task, which nothing awaits: logged by asyncio,
    # if at all, as an exception never retrieved, without the event it was about.
    plugin_module(tmp_path, monkeypatch, "reporting_plugin", PLUGIN)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, plugins=["reporting_plugin"]), [chat],
                             script={"parent": [[{"text": "x"}]]})
    db = gateway.store.db
    db.write("CREATE TABLE ballast(x BLOB)")
    await db.durable()
    # Answering fails for a reason of its own (no storage refusal: counted), and counting it needs room.
    db._conn.execute("CREATE TEMP TRIGGER broken BEFORE INSERT ON main.gateway_outbox WHEN NEW.key LIKE"
                     " 'cmd-chat-ev-report:%' BEGIN SELECT RAISE(ABORT, 'no such chat'); END")
    db._conn.execute("CREATE TEMP TRIGGER no_room AFTER UPDATE OF attempts ON main.gateway_inbox"
                     " BEGIN INSERT INTO ballast VALUES (zeroblob(100000)); END")
    db._conn.execute(f"PRAGMA max_page_count={pages(db) + 4}")
    await chat.say("/report now", event_id="ev-report")
    await settled(gateway)
    [kept] = [r for r in caplog.records if "kept for the next start" in r.getMessage()]
    assert "ev-report" in kept.getMessage() and "no such chat" in kept.getMessage()
    db._conn.execute("DROP TRIGGER no_room")
    db._conn.execute("DROP TRIGGER broken")
    db._conn.execute(ROOM)
    assert not gateway.store.inbox.settled("chat", "ev-report") and gateway.store.dead_letters.all() == []
