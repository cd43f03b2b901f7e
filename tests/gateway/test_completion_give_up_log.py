"""Giving up on a completion turn logs that its results are sent to the chat as they are only once they
are journaled: when the store refuses them, the log must not claim they went out."""

from __future__ import annotations

import logging

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_completion_failures import BACKGROUND, break_replies, found, parent
from tests.polling import until

CLAIM = "they are sent to the chat as they are"


async def test_results_the_store_refuses_to_journal_are_not_logged_as_sent(tmp_path, gateways, caplog):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent({"text": "never sent"}), "leaf": found})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1}), [chat], model=model)
    gateway.store.db._conn.execute(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.gateway_outbox WHEN NEW.key LIKE '%:undelivered:%'"
        " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    break_replies(gateway, "completion")
    await chat.say("please delegate")
    await until(lambda: any("sending its results as they are failed" in r.getMessage() for r in caplog.records))
    await settled(gateway)
    assert chat.texts() == ["on it"]
    assert not any(CLAIM in r.getMessage() for r in caplog.records if r.name == "gateway.ledger")
    assert len(gateway.store.delegations.running()) == 1  # unsettled: given up on again after the next start


async def test_results_journaled_as_they_are_are_logged_as_sent(tmp_path, gateways, caplog):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent({"text": "never sent"}), "leaf": found})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1}), [chat], model=model)
    break_replies(gateway, "completion")
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    [claim] = [r for r in caplog.records if r.name == "gateway.ledger" and CLAIM in r.getMessage()]
    assert claim.levelno == logging.ERROR
