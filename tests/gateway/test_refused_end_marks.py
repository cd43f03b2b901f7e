"""A turn that ended, but whose end the store refused (a full disk: `gateway.owed_ends`), is no longer
running: a death while its end is owed is no fault of it, and must not be charged to its message (set
aside with an apology after it was answered) or to its completion turn (its results sent twice)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.dead_letters import APOLOGY
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_completion_failures import BACKGROUND, found, parent
from tests.gateway.test_dead_letters import echo, execute, killed_now
from tests.polling import until

REFUSE_SETTLE = {
    "message": "CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_inbox WHEN NEW.status='done'"
               " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    "completion": "CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_delegations WHEN NEW.status!='running'"
                  " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
}


async def test_a_message_answered_but_not_settled_is_not_charged_with_a_death_after(tmp_path, gateways):
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": echo})
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    await gateway.store.durable()
    assert not gateway.store.inbox.settled("chat", "ev-1") and gateway.store.inbox.begun() == set()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    execute(tmp_path, "DROP TRIGGER refuse")

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], script={"parent": echo})
    await settled(gateway2)
    assert chat2.texts() == []  # handed to the model again, uncharged: its answer is journaled once
    assert APOLOGY not in chat2.texts()
    assert gateway2.store.dead_letters.all() == []
    assert gateway2.store.inbox.settled("chat", "ev-1")


async def test_a_completion_delivered_but_not_settled_is_not_charged_with_a_death_after(tmp_path, gateways):
    config = make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent({"text": "results are in"}), "leaf": found})
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db.write(REFUSE_SETTLE["completion"])
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it", "results are in"])
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    await gateway.store.durable()
    assert len(gateway.store.delegations.running()) == 1 and gateway.store.delegations.deliveries_begun() == set()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    execute(tmp_path, "DROP TRIGGER refuse")

    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": parent({"text": "results are in"}), "leaf": found})
    gateway2 = await gateways(config, [chat2], model=model2)
    await settled(gateway2)
    assert not any(UNDELIVERABLE in t for t in chat2.texts()), chat2.texts()
    assert chat2.texts() == []  # handed to the model again, uncharged: its answer is journaled once
    [row] = gateway2.store.delegations.latest(gateway2.sessions.get("chat", "c1", None).session_id, 5)
    assert (row.status, row.reason) == ("delivered", None)
