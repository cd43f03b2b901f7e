"""A background delegation's card across a restart: one whose final edit the store refused until the gateway
stopped (or died) is finished by the next start, once, with the line it would have had; one finished before, or
whose final edit the platform was still refusing, is not finished again."""

from __future__ import annotations

import contextlib
import logging
import sqlite3

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import NetworkError, RateLimited
from tests.gateway.test_card_full_disk import refusing_card_final_edits
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_ledger import BACKGROUND, delegating_with_cards, no_settling, parent, rows
from tests.polling import until

DONE = "✓ Done in 3 s · 2 subagents"
LATER = 600.0
"""How much later the gateway starts again: a card finished then still reads its delegation's time."""


async def restarted(tmp_path, gateways, chat, clock):
    """The gateway started again on the same state and chat (whose messages it edits), ``LATER`` on."""
    display = {**BACKGROUND["display"], "progress": "card", "progress_delay": 3}
    model = ScriptedModel({"parent": parent(), "leaf": lambda r: {"text": "not run again"}})
    config = make_config(tmp_path, display=display, agent={"gateway_notify_interval": 180})
    gateway = await gateways(config, [chat], model=model, clock=FakeClock(start=clock.time() + LATER))
    await settled(gateway)
    return gateway, model


async def stop(gateway, tmp_path, death: str) -> None:
    if death == "SIGKILL":  # what is committed now is all the next start finds
        await gateway.store.durable()
        restore = killed_now(tmp_path)
        await gateway.stop(grace=0)
        restore()
    else:
        await gateway.stop(grace=0)


@pytest.mark.parametrize("death", ["graceful stop", "SIGKILL"])
async def test_a_cards_final_edit_the_store_refused_until_the_gateway_stopped_is_made_after_the_restart(
        tmp_path, gateways, caplog, death):
    # Before, the edit was tried again in memory only: once the process stopped, nothing recorded it owed,
    # and the delegation (settled, its results delivered) was never looked at again. The card read ⏳ for good.
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")
    connection = gateway.store.db._conn
    connection.set_authorizer(no_settling)  # the settle waits for the sweep, where the card's edit alone is refused
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy)
    connection.set_authorizer(refusing_card_final_edits)
    gateway.retention.sweep()
    assert rows(gateway) == [] and card.text.startswith("⏳")
    assert any(r.getMessage().startswith("could not record the final edit") for r in caplog.records)
    await stop(gateway, tmp_path, death)
    assert card.text.startswith("⏳") and chat.texts() == ["on it", card.text, "results: alpha"]

    caplog.set_level(logging.INFO, logger="gateway.delegation_cards")
    gateway2, model2 = await restarted(tmp_path, gateways, chat, clock)
    assert card.edits == [DONE]  # the delegation's 3 s, not the 10 min until the restart
    assert chat.texts() == ["on it", DONE, "results: alpha"] and model2.requests == []
    assert ("finishing the cards of 1 delegation(s) settled before the restart without their final edit"
            in caplog.messages)
    await gateway2.stop(grace=0)

    gateway3, _ = await restarted(tmp_path, gateways, chat, clock)  # recorded finished: never again
    assert card.edits == [DONE] and len(chat.messages) == 3


@pytest.mark.parametrize("refused", [None, RateLimited("slow down", retry_after=30), NetworkError("unreachable")],
                         ids=["sent", "rate-limited", "unreachable"])
@pytest.mark.parametrize("death", ["graceful stop", "SIGKILL"])
async def test_a_card_whose_final_edit_was_journaled_is_edited_once_across_a_restart(
        tmp_path, gateways, refused, death):
    # The outbox keeps an edit the platform refuses for now, and sends it after the restart: the start's
    # look at the cards owed must not add a second one (on Telegram, an edit to the same text is refused,
    # and a refused edit is sent as a new message).
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")
    edit = chat.edit

    async def refusing(*args):
        raise refused

    if refused is not None:
        chat.edit = refusing
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy and rows(gateway) == [])
    if refused is None:
        await chat.wait_for(lambda: card.edits == [DONE])
    await stop(gateway, tmp_path, death)
    chat.edit = edit

    await restarted(tmp_path, gateways, chat, clock)
    assert card.edits == [DONE] and chat.texts() == ["on it", DONE, "results: alpha"]


def test_a_schema_8_store_owes_no_card_of_a_delegation_it_settled(tmp_path):
    # That build recorded nothing of its cards: it finished them, or left them as they are; a start after it
    # does not edit them all again.
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.db.write("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                   " dispatched_at, tasks, status, settled_at) VALUES ('deleg_1', 'chat:c1:', 's', 't', 1, '[]',"
                   " 'delivered', 2)")
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("ALTER TABLE gateway_delegations DROP COLUMN card_owed")
        db.execute("UPDATE gateway_meta SET value='8' WHERE key='schema_version'")
    store = GatewayStore(path)
    try:
        assert store.delegations.cards_owed() == []
        assert store.delegations.get("deleg_1").status == "delivered"
    finally:
        store.close()


async def test_a_card_owed_in_a_chat_of_a_platform_no_longer_configured_waits_for_it(tmp_path, gateways, caplog):
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")
    connection = gateway.store.db._conn
    connection.set_authorizer(no_settling)
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy)
    connection.set_authorizer(refusing_card_final_edits)
    gateway.retention.sweep()
    await gateway.stop(grace=0)

    other = RecordingAdapter("other")
    gateway2, _ = await restarted(tmp_path, gateways, other, clock)  # a start without the chat's platform
    [row] = gateway2.store.delegations.cards_owed()
    said = f"the card of delegation {row.delegation_id} stays as it is until chat is configured again"
    assert said in caplog.messages
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await gateway2.stop(grace=0)

    await restarted(tmp_path, gateways, chat, clock)
    assert card.edits == [DONE]
