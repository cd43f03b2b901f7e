"""The model's text beside its tool calls (an interim message) that the state database refuses to journal (another
process holds its write lock, a full disk) is left out, and the turn goes on to its answer. Before, the refusal
crashed the turn: its chat got "Sorry — something went wrong" in place of the answer, and its message was settled
so."""

from __future__ import annotations

import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.gateway.test_write_lock_held_mid_turn import counting, held_as_the_model_answers
from tests.polling import until

CHECKING = {"text": "Let me check.", "tool_calls": [{"name": "list_files", "arguments": {}}]}


async def test_interim_text_while_the_lock_is_held_leaves_the_turn_to_answer(tmp_path, gateways):
    others: list[sqlite3.Connection] = []

    def free_then_answer(request) -> dict:
        others[0].execute("ROLLBACK")
        return {"text": "no files here"}

    asked: list[str] = []
    model = ScriptedModel({"parent": counting(asked, {"wait": "answer", **CHECKING}, free_then_answer)})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    await chat.say("hello", event_id="e1")
    others.append(await held_as_the_model_answers(gateway, model))
    try:
        await until(lambda: not gateway.runner.busy)  # the turn is over
        if others[0].in_transaction:  # the model was not asked again: what the turn's end owes goes once it is free
            others[0].execute("ROLLBACK")
            await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)
            clock.advance(PAY_AGAIN_FIRST)
        await chat.wait_for(lambda: chat.texts("reply"))
        await settled(gateway)
    finally:
        others[0].close()
    assert chat.texts() == ["no files here"]
    assert gateway.store.inbox.settled("chat", "e1")


async def test_interim_text_a_full_disk_refuses_leaves_the_turn_to_answer(tmp_path, gateways):
    model = ScriptedModel({"parent": [[CHECKING, {"text": "no files here"}]]})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    no_room(gateway.store.db, "NEW.kind = 'interim'", "gateway_outbox")
    await chat.say("hello", event_id="e1")
    await chat.wait_for(lambda: chat.texts("reply"))
    await settled(gateway)
    room(gateway.store.db)
    assert chat.texts() == ["no files here"]
