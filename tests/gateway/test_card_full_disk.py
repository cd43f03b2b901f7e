"""A background delegation's card whose final edit meets a full disk after the delegation's settle went
through (an update in place fits where the edit's new outbox row does not): the settle stands, and so
does the rest of the turn's end or of the stop; the refusal is one line, and the card is finished once
the store takes its edit, without a restart."""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path

from gateway.sender import BACKOFF_FIRST
from gateway.testing import settled
from tests.gateway.test_ledger import delegating_with_cards, no_settling, rows
from tests.polling import until

CARDS = str(Path("gateway", "delegation_cards.py"))


def refusing_card_final_edits(action: int, table: str | None, *_) -> int:
    """An SQLite authorizer refusing the outbox row of a delegation card's final edit only: an insert into
    the outbox made from `gateway.delegation_cards` (the card's live edits are published by its own task,
    from `gateway.progress_card`; everything else the chat is sent, from elsewhere). SQLite asks it only as it
    prepares a statement: setting it expires those prepared before, but one it lets through is not asked about
    again, so no other message may go into the outbox between setting it and the edits it is to refuse."""
    if action == sqlite3.SQLITE_INSERT and table == "gateway_outbox":
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename.endswith(CARDS):
                return sqlite3.SQLITE_DENY
            frame = frame.f_back
    return sqlite3.SQLITE_OK


def refusals(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gateway.delegation_cards" and r.levelno >= logging.WARNING]


async def test_a_cards_final_edit_the_full_disk_refused_neither_holds_the_turns_end_nor_stays_running(
        tmp_path, gateways, caplog):
    # The results' reply went out, but the store refused their delegation's settle: the turn's end is owed, and
    # paid by the retention sweep, where the settle goes through and the card's final edit is refused. Before,
    # that refusal raised out of the settle: the end stayed owed, said to be for "its delegation's outcome" (which
    # was recorded), and once paid, it found the delegation settled and never finished the card.
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")

    connection = gateway.store.db._conn
    connection.set_authorizer(no_settling)
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy)
    session = next(iter(gateway.sessions))
    assert session.owed and rows(gateway)
    caplog.clear()
    connection.set_authorizer(refusing_card_final_edits)
    gateway.retention.sweep()
    assert not session.owed and rows(gateway) == []  # the turn's end is recorded whole
    assert [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"] == []
    assert card.text.startswith("⏳")
    [refused] = refusals(caplog)
    said = refused.getMessage()
    assert said.startswith("could not record the final edit of the card of delegation deleg_")
    assert "in chat chat c1 (DatabaseError: not authorized)" in said and refused.exc_info is None
    assert "alpha" not in said  # nothing of what the chat asked for

    await clock.until_sleeping(lasting=BACKOFF_FIRST)
    clock.advance(BACKOFF_FIRST)  # refused again: said once only
    await clock.until_sleeping(lasting=2 * BACKOFF_FIRST)
    connection.set_authorizer(None)  # room again
    clock.advance(2 * BACKOFF_FIRST)
    await chat.wait_for(lambda: card.text.startswith("✓"))
    assert card.text == "✓ Done in 3 s · 2 subagents"  # its time is the delegation's, not the wait's
    await settled(gateway)
    assert chat.texts() == ["on it", card.text, "results: alpha"] and len(refusals(caplog)) == 1


async def test_stop_settles_every_delegation_when_the_full_disk_refuses_their_cards_final_edits(
        tmp_path, gateways, caplog):
    # Before, the first card's refused edit raised out of the stop's settling: the other delegation stayed
    # running, and the /stop failed (to be tried again as a message the gateway failed on), unanswered.
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways, lambda r: {"wait": "forever"},
                                                              delegations=2)
    cards = [m for m in chat.messages if m.kind == "notice"]
    connection = gateway.store.db._conn
    connection.set_authorizer(refusing_card_final_edits)
    await chat.say("/stop")
    await until(lambda: "command" in chat.kinds() or any(r.name == "gateway.dead_letters" for r in caplog.records))
    assert rows(gateway) == []
    assert chat.texts("command") == ["Stopped 4 subagents. Their partial results are listed by /agents."]
    assert [card.text[0] for card in cards] == ["⏳", "⏳"]
    assert len(refusals(caplog)) == 2  # one line per card

    connection.set_authorizer(None)
    await clock.until_sleeping(2, lasting=BACKOFF_FIRST)
    clock.advance(BACKOFF_FIRST)
    await chat.wait_for(lambda: [card.text for card in cards] == ["⏹ Stopped", "⏹ Stopped"])
    await settled(gateway)
    assert rows(gateway) == [] and chat.texts("completion") == []
