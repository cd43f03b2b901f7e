"""Errors the gateway keeps in its state database are masked as a log line is, when they are written: a backup of
the database, or a reader that forgot to mask, then holds no secret an exception quoted. Read here as they lie in
the file, with sqlite3, not through the gateway's readers (which mask again)."""

from __future__ import annotations

import contextlib
import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.logging import MASK, register_secret
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import BadRequest
from tests.gateway.observing import FailingAdapter
from tests.gateway.test_completion_failures import BACKGROUND, found, parent

SECRET = "x1-stored-secret-5b9e2c71d0"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""
QUOTING = f"GET https://api.example/v1/things?api_key={SECRET} returned 500"


def raw(tmp_path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
        return db.execute(sql).fetchall()


def masked(error: str) -> bool:
    return SECRET not in error and MASK in error and "returned 500" in error


async def test_an_events_error_is_kept_masked_in_the_inbox_and_in_its_dead_letter(tmp_path, gateways):
    register_secret(SECRET)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat],
                             script={"parent": [[{"text": "never"}]]})

    def refuse(row):
        raise RuntimeError(QUOTING)

    gateway.store.sessions.save = refuse  # handling the message fails, quoting a request with the key in it
    await chat.say("hello", chat="c9", event_id="ev-quoting")
    await chat.wait_for(lambda: chat.messages)  # set aside at once, with the apology
    await settled(gateway)
    await gateway.store.durable()
    [(inbox_error,)] = raw(tmp_path, "SELECT last_error FROM gateway_inbox WHERE event_id='ev-quoting'")
    [(letter_error,)] = raw(tmp_path, "SELECT error FROM gateway_dead_letters WHERE event_id='ev-quoting'")
    assert masked(inbox_error), inbox_error
    assert inbox_error.startswith("RuntimeError: ")
    assert letter_error == inbox_error


async def test_a_completion_turns_error_is_kept_masked_while_it_is_tried_again(tmp_path, gateways):
    register_secret(SECRET)
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent({"text": "never sent"}), "leaf": found})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 2}), [chat], model=model,
                             clock=clock)
    enqueue_long = gateway.outbox.enqueue_long

    async def failing(*args, **kw):
        if kw["key"].endswith(":completion"):  # the results' reply, handed to the outbox
            raise RuntimeError(QUOTING)
        return await enqueue_long(*args, **kw)

    gateway.outbox.enqueue_long = failing
    await chat.say("please delegate")
    await clock.until_sleeping(lasting=0.5)  # the first attempt failed and was counted: tried again after a pause
    await gateway.store.durable()
    [(error,)] = raw(tmp_path, "SELECT last_error FROM gateway_delivery_attempts")
    assert masked(error), error
    clock.advance(0.5)
    await chat.wait_for(lambda: len(chat.messages) == 2)  # given up: its results sent as they are
    await settled(gateway)


async def test_a_refused_parts_error_is_kept_masked_in_the_outbox(tmp_path, gateways):
    register_secret(SECRET)
    chat = FailingAdapter()
    chat.fail_next(BadRequest(QUOTING, method="send", chat_id="c1"))
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "refused"}]]})
    await chat.say("hello")
    await settled(gateway)
    await gateway.store.durable()
    [(error,)] = raw(tmp_path, "SELECT last_error FROM gateway_outbox WHERE status='failed'")
    assert masked(error), error
    assert error.startswith("BadRequest: ")
    assert chat.messages == []
