"""In a group the first message of a turn's answer quotes the member's message it answers. A question (``clarify``),
a file (``send_file``) or a message (``send_message``) the state database refuses to journal (a full disk, another
process's write lock) is left out, the model told; the quote it took goes to the answer the model writes then.
Before, the refused message took the quote with it, and the answer went out unquoted, nobody's in a busy group."""

from __future__ import annotations

import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES, asking_parent
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.gateway.test_file_sends import TakingUploads, sending_a_csv
from tests.gateway.test_write_lock_held_mid_turn import counting, held_as_the_model_answers
from tests.polling import until

ASKING = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?", "choices": CHOICES}}]}


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]


async def test_a_question_the_full_disk_refuses_leaves_its_quote_to_the_answer(tmp_path, gateways):
    chat, model = RecordingAdapter(), ScriptedModel({"parent": asking_parent})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    no_room(gateway.store.db, "NEW.key LIKE '%:ask:%'", "gateway_outbox")
    await chat.say("please deploy the app", private=False, message_id="m-7")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    room(gateway.store.db)
    [result] = tool_results(model)
    assert "clarify failed" in result  # the model is told, and answers without asking
    [answer] = chat.messages
    assert answer.text.startswith("deploying to: ")
    assert answer.outbound.reply_to == "m-7"


async def test_a_question_while_the_lock_is_held_leaves_its_quote_to_the_answer(tmp_path, gateways):
    others: list[sqlite3.Connection] = []

    def free_then_answer(request) -> dict:
        others[0].execute("ROLLBACK")
        return {"text": "going on without asking"}

    model = ScriptedModel({"parent": counting([], {"wait": "answer", **ASKING}, free_then_answer)})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="e1", private=False, message_id="m-7")
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
    assert "clarify failed" in tool_results(model)[0]
    [answer] = chat.messages
    assert answer.text == "going on without asking"
    assert answer.outbound.reply_to == "m-7"


async def test_a_question_the_full_disk_refuses_where_nobody_can_answer_leaves_its_quote_to_the_answer(
        tmp_path, gateways):
    chat, model = RecordingAdapter(), ScriptedModel({"parent": asking_parent})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    gateway.questions.input_ended("chat")
    no_room(gateway.store.db, "NEW.key LIKE '%:ask:%'", "gateway_outbox")
    await chat.say("please deploy the app", private=False, message_id="m-7")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    room(gateway.store.db)
    [answer] = chat.messages
    assert answer.text.startswith("deploying to: ")
    assert answer.outbound.reply_to == "m-7"


async def test_a_file_the_full_disk_refuses_leaves_its_quote_to_the_answer(tmp_path, gateways):
    chat = TakingUploads()
    config, model = sending_a_csv(tmp_path, "could not send it")
    gateway = await gateways(config, [chat], model=model)
    no_room(gateway.store.db, "NEW.op = 'file'", "gateway_outbox")
    await chat.say("send it", private=False, message_id="m-7")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    room(gateway.store.db)
    [result] = tool_results(model)
    assert "send_file failed" in result and "full" in result
    assert chat.uploads == [] and gateway.store.outbox.kept_files() == []
    [answer] = chat.messages
    assert answer.text == "could not send it"
    assert answer.outbound.reply_to == "m-7"


async def test_a_send_message_the_full_disk_refuses_leaves_its_quote_to_the_answer(tmp_path, gateways):
    said = {"tool_calls": [{"name": "send_message", "arguments": {"text": "on my way"}}]}
    model = ScriptedModel({"parent": [[said, {"text": "deployed"}]]})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    no_room(gateway.store.db, "NEW.key LIKE '%:message:%'", "gateway_outbox")
    await chat.say("please deploy the app", private=False, message_id="m-7")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    room(gateway.store.db)
    [result] = tool_results(model)
    assert "send_message failed" in result
    [answer] = chat.messages
    assert answer.text == "deployed"
    assert answer.outbound.reply_to == "m-7"
