"""A member's ``/stop`` or ``/new`` that ends another member's background work stands when the state database refuses
to read back that member's message (for the note telling them who stopped it): the note is left out and logged, the
work is stopped and the command answered, as when the store refuses to queue the note."""

from __future__ import annotations

import sqlite3

import pytest

from gateway.testing import settled
from tests.gateway.test_stop_spares_others_results import bobs_results_wait_behind_carols_turn


def refuse_reading_messages(gateway) -> None:
    """The inbox refuses to read a message back by its turn, as a full disk's rolled-back store does."""

    def refused(platform: str, turn_id: str) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    gateway.store.inbox.event_of_turn = refused


@pytest.mark.parametrize(("command", "answer"), [
    ("/stop", "Stopped the running turn and 1 subagent. The subagent's partial result is listed by /agents."),
    ("/new", "Started a new session and ended 1 subagent. Delegation here is background."),
])
async def test_a_stop_whose_note_to_the_asker_cannot_be_read_still_stops_their_work(tmp_path, gateways, caplog,
                                                                                    command, answer):
    chat, model, gateway = await bobs_results_wait_behind_carols_turn(tmp_path, gateways, finish=False)
    refuse_reading_messages(gateway)
    await chat.say(command, user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    model.release("dig")
    del gateway.store.inbox.event_of_turn  # reading again: the gateway's own stop at the test's end reads it
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages[1:]] == [(answer, "m-carol-stop")]
    assert gateway.store.delegations.running() == []
    assert any(r.levelname == "WARNING" and "could not tell its asker who stopped it (OperationalError: disk I/O"
               in r.getMessage() for r in caplog.records)

