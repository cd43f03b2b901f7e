"""A stop while another process holds the state database's write lock (an ``sqlite3`` shell left after BEGIN
IMMEDIATE) or the disk is full: the clean stop cannot be recorded, and the stop says so and goes on closing the
lifecycle host and the store. Raised, it left both open and ended the process with a traceback."""

from __future__ import annotations

import logging
import sqlite3

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config
from lifecycle import PROCESS_EXIT, SubagentState
from tests.gateway.test_background_stop_restart import parent

BUSY_TIMEOUT = 0.3


async def test_a_stop_the_store_cannot_record_closes_the_host_and_the_store_all_the_same(tmp_path, gateways, caplog):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT  # the store's 5 s, shortened
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        await gateway.stop()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert db.closed
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(e.startswith("the clean stop could not be recorded (OperationalError: database is locked)")
               for e in errors), errors


async def test_a_stop_the_store_cannot_record_with_a_child_running_ends_without_raising(tmp_path, gateways, caplog):
    # Closing the lifecycle host journals the interrupted child, which the same lock refuses: raised, that skipped
    # the trace exporter's close and the store's, and the process ended with a traceback and status 1.
    config, chat = make_config(tmp_path), RecordingAdapter()
    model = ScriptedModel({"parent": parent([]), "leaf": lambda request: {"wait": "leaf", "text": "unused"}})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("leaf")
    [row] = gateway.store.delegations.running()
    sid = row.tasks[0].subagent_id
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        await gateway.stop(grace=0)
    finally:
        other.execute("ROLLBACK")
        other.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(e.startswith("the ends of the children the stop interrupted could not be recorded") for e in errors)
    assert db.closed  # the connection the lifecycle and the store share, closed all the same
    gateway = await gateways(config, [RecordingAdapter()], model=ScriptedModel({"parent": parent([])}))
    found = await gateway.host.children.lookup([sid])
    assert (found[sid].state, found[sid].error) == (SubagentState.INTERRUPTED, PROCESS_EXIT)  # as after a crash
