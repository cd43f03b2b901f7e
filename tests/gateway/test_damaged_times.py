"""A time the state database holds as something else (a hand edit, a damaged page) is mended as the store opens:
the start goes on, and what is owed to a user is neither dropped nor left blocking its chat."""

from __future__ import annotations

import logging
import sqlite3

from gateway.store import GatewayStore, NewMessage
from gateway.store.damaged_times import LOST_TIME
from gateway.testing import RecordingAdapter, make_config


def damage(tmp_path, sql: str) -> None:
    with sqlite3.connect(tmp_path / "state" / "switchboard.db") as conn:
        assert conn.execute(sql).rowcount == 1


async def stopped_with(tmp_path, gateways, messages=(), hold=None):
    config = make_config(tmp_path)
    gateway = await gateways(config, [RecordingAdapter()], script={"parent": [[{"text": "x"}]]})
    gateway.store.outbox.add_messages(list(messages))
    if hold is not None:
        gateway.store.outbox.begin_hold("chat", hold)
    await gateway.stop(grace=0)
    return config


async def test_a_credential_hold_whose_time_is_damaged_is_forgotten_and_the_gateway_starts(tmp_path, gateways,
                                                                                          caplog):
    config = await stopped_with(tmp_path, gateways, hold=5.0)
    damage(tmp_path, "UPDATE gateway_credential_holds SET since='garbage'")
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "answered"}]]})
    await chat.say("hello")
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["answered"]
    assert gateway.store.outbox.hold_periods() == []
    assert "gateway_credential_holds.since held 1 value(s) that are not times" in caplog.text
    assert "garbage" not in caplog.text  # the value itself is never logged


async def test_a_pending_part_whose_time_is_damaged_is_set_aside_failed_and_its_chat_goes_on(tmp_path, gateways,
                                                                                            caplog):
    caplog.set_level(logging.WARNING)
    config = await stopped_with(tmp_path, gateways, [NewMessage("owed", "chat", "c1", None, "owed text"),
                                                     NewMessage("later", "chat", "c1", None, "later text")])
    damage(tmp_path, "UPDATE gateway_outbox SET created_at='garbage' WHERE key='owed'")
    damage(tmp_path, "UPDATE gateway_outbox SET next_attempt_at='garbage' WHERE key='later'")
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["later text"]  # its retry time lost, it goes now; the chat is not held up
    owed = gateway.store.outbox.message("owed")
    assert (owed.status, owed.last_error, owed.text) == ("failed", LOST_TIME, "owed text")
    assert isinstance(owed.created_at, float)
    assert gateway.outbox.retry(owed.id)  # the operator's re-queue sends it
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert chat.texts() == ["later text", "owed text"]


def test_a_store_with_no_damaged_time_is_left_as_it_is(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    store.outbox.add_messages([NewMessage("k", "chat", "c1", None, "hi")])
    store.close()
    before = (tmp_path / "state.db").read_bytes()
    GatewayStore(tmp_path / "state.db").close()
    assert (tmp_path / "state.db").read_bytes() == before
