"""Subagents launched again (``/retry``, ``/agents retry``, a restart with ``on_restart: resume``) whose
delegation the state database refuses to record: they are stopped, not left to run for no one (nothing
would deliver their results or tell the chat they ran), and the chat is told nothing was retried."""

from __future__ import annotations

import contextlib
import logging
import sqlite3

from gateway.testing import settled
from lifecycle import SubagentState
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_ledger import beta_failed, rows, start
from tests.polling import until

NOT_RETRIED = ("Nothing was retried: the state database cannot be written right now, so the retry could not be "
               "recorded, and nothing of it runs. Send {command} again later.")
NOT_RECORDED = "the delegation could not be recorded"
"""The error of a child stopped for want of its delegation's record, as a background dispatch's."""


def no_recording(action: int, table: str | None, *_) -> int:
    """An SQLite authorizer refusing new delegations (a failing disk, for those writes alone)."""
    refused = action == sqlite3.SQLITE_INSERT and table == "gateway_delegations"
    return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK


async def stopped_unrecorded(gateway, session) -> list:
    """Once none of the session's children is at work: those stopped for want of their delegation's record."""
    await until(lambda: gateway.host.children.children(session.session_id) == ())
    return [c for c in gateway.host.children.recent(session.session_id) if c.error == NOT_RECORDED]


async def test_a_retry_the_store_cannot_record_stops_what_it_launched_and_says_nothing_was_retried(
        tmp_path, gateways, caplog):
    # Before, the children ran for no one and the /retry failed: tried again as a message the gateway failed on,
    # each attempt launching the task once more, until the chat got the apology for a message set aside.
    chat, model, gateway = await beta_failed(tmp_path, gateways)
    session = next(iter(gateway.sessions))
    connection = gateway.store.db._conn
    connection.set_authorizer(no_recording)
    await chat.say("/retry")
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == [NOT_RETRIED.format(command="/retry")]
    [stopped] = await stopped_unrecorded(gateway, session)
    assert (stopped.goal, stopped.state) == ("beta", SubagentState.INTERRUPTED)
    assert len(gateway.ledger.latest(session, 5)) == 1  # the failed one: no delegation was recorded
    assert not [r for r in caplog.records if r.name == "gateway.dead_letters"]
    [said] = [r for r in caplog.records if r.name == "gateway.ledger" and r.levelno >= logging.WARNING]
    assert said.getMessage().startswith("could not record the 1 subagent(s) launched again for delegation deleg_")
    assert said.getMessage().endswith("(DatabaseError: not authorized): they are being stopped")

    connection.set_authorizer(None)  # room again: the same /retry runs it
    await chat.say("/retry")
    await chat.wait_for(lambda: len(chat.texts("command")) == 2)
    assert chat.texts("command")[1] == "Retrying 1 subagent: beta. The results will follow."
    model.release("retried")
    await chat.wait_for(lambda: len(chat.texts("completion")) == 2)
    await settled(gateway)
    assert rows(gateway) == [] and len(await stopped_unrecorded(gateway, session)) == 1


async def test_an_agents_retry_the_store_cannot_record_stops_what_it_launched_and_says_nothing_was_retried(
        tmp_path, gateways, caplog):
    chat, model, gateway = await beta_failed(tmp_path, gateways)
    session = next(iter(gateway.sessions))
    (row,) = gateway.ledger.latest(session, 1)
    beta = row.tasks[1].subagent_id
    gateway.store.db._conn.set_authorizer(no_recording)
    await chat.say(f"/agents retry {beta}")
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == [NOT_RETRIED.format(command=f"/agents retry {beta}")]
    [stopped] = await stopped_unrecorded(gateway, session)
    assert (stopped.goal, stopped.state) == ("beta", SubagentState.INTERRUPTED)
    assert gateway.ledger.latest(session, 5) == [row]
    assert not [r for r in caplog.records if r.name == "gateway.dead_letters"]
    gateway.store.db._conn.set_authorizer(None)
    await settled(gateway)


async def test_children_resumed_after_a_restart_that_the_store_cannot_record_are_stopped_and_reported(
        tmp_path, gateways):
    # Before, they ran for no one: the delegation still named the children the restart lost, and nothing
    # delivered the new ones' results, or told the chat anything, until the next restart relaunched them again.
    resume = {"lifecycle": {"on_restart": "resume"}}
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"}, **resume)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await until(lambda: sum(1 for r in model.requests if r.role == "leaf") == 2)
    path = gateway.store.db.path
    await gateway.stop(grace=0)
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # the store refuses to point it at new children
        db.execute("CREATE TRIGGER no_relaunch BEFORE UPDATE OF tasks ON gateway_delegations"
                   " BEGIN SELECT RAISE(ABORT, 'refused'); END")

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"wait": "forever"}, **resume)
    await chat2.wait_for(lambda: chat2.messages)
    [report] = chat2.texts()
    assert report.startswith("⚠️ The gateway restarted") and "Send /retry" in report
    session = next(iter(gateway2.sessions))
    stopped = await stopped_unrecorded(gateway2, session)
    assert sorted(c.goal for c in stopped) == ["alpha", "beta"]
    assert {c.state for c in stopped} == {SubagentState.INTERRUPTED}
    await settled(gateway2)
    assert rows(gateway2) == []  # reported


async def test_a_retry_whose_process_died_before_its_delegation_was_recorded_runs_once_after_the_restart(
        tmp_path, gateways):
    # The children were journaled, their delegation not yet: /retry was never answered, so it is handled again
    # after the restart, and the children the death left (in-process: ended with it) are never reported.
    chat, model, gateway = await beta_failed(tmp_path, gateways)
    journal = gateway.host.lifecycle.journal
    real_sync = journal.sync_launch
    killed = []

    async def dying_after_the_launch(subagent_ids):
        await real_sync(subagent_ids)
        killed.append(killed_now(tmp_path))  # the process dies before the ledger records the delegation

    journal.sync_launch = dying_after_the_launch
    await chat.say("/retry")
    await chat.wait_for(lambda: chat.texts("command"))
    await gateway.stop(grace=0)
    [restore] = killed
    restore()

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": f"redone {r.metadata['goal']}"})
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    await settled(gateway2)
    assert chat2.texts("command") == ["Retrying 1 subagent: beta. The results will follow."]
    assert chat2.kinds() == ["command", "completion"]  # nothing said of the children the death left
    assert [r.metadata["goal"] for r in model2.requests if r.role == "leaf"] == ["beta"]
    assert rows(gateway2) == []
