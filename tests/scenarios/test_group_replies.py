"""In a Telegram group, each answer replies to (quotes) the message it answers, through the real
aiogram client in `TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway`.

With several members asking, answers come one after another: quoted, each shows whose question it
answers. A private chat's answers quote nothing (there is only one person to answer), and an answer
to a message deleted meanwhile still arrives, unquoted."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.late_notes import note_text
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_turns import BOB, BOT, CAROL, GROUP, bobs_turn_then_carols, handled

PRIVATE = 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def chat(fake, tmp_path):
    started: list[Gateway] = []

    async def start(model: ScriptedModel | None = None, **sections: Any) -> Gateway:
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, **sections)
        (tmp_path / "state" / "workspace").mkdir(parents=True, exist_ok=True)
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        started.append(gateway)
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


def ask(fake: FakeTelegram, chat_id: int, text: str, **who: Any) -> tuple[int, int]:
    """A member writes ``text``: (update id, message id)."""
    update = fake.message_update(chat_id, text, **who)
    return fake.push_update(update), update["message"]["message_id"]


NOTE = "(The file q3.csv could not be sent here: it is larger than this chat takes.)"
"""In place of the file Telegram refuses (413) in these tests."""


def answers(fake: FakeTelegram, chat_id: int) -> list[tuple[str, int | None]]:
    return [(m["text"], m["reply_to"]) for m in fake.messages[str(chat_id)]]


@pytest.mark.parametrize("topic", [None, 7])
async def test_each_members_answer_replies_to_their_question(fake, chat, topic):
    model = bobs_turn_then_carols()
    gateway = await chat(model)
    _, bobs = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB, thread_id=topic)
    await model.reached("bob")
    carol, carols = ask(fake, GROUP, f"@{BOT} who is on call tonight?", **CAROL, thread_id=topic)
    await fake.wait_for(lambda: handled(gateway, carol))
    model.release("bob")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    assert answers(fake, GROUP) == [("answer for bob", bobs), ("answer for carol", carols)]
    # In the forum topic; in a supergroup, each in the reply chain of the question it quotes, which heads it.
    assert [m["thread_id"] for m in fake.messages[str(GROUP)]] == ([topic, topic] if topic else [bobs, carols])
    [first, _] = fake.calls_to("sendMessage")
    assert json.loads(first["reply_parameters"]) == {"message_id": bobs, "allow_sending_without_reply": True}


async def test_only_the_first_part_of_a_long_answer_replies(fake, chat):
    long = "\n\n".join(f"paragraph {i} " + "x" * 900 for i in range(6))  # two parts of Telegram's 4096
    gateway = await chat(ScriptedModel({"parent": [[{"text": long}]]}))
    _, asked = ask(fake, GROUP, f"@{BOT} write it all down", **BOB)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    assert [reply for _, reply in answers(fake, GROUP)] == [asked, None]


async def test_a_private_chats_answer_quotes_nothing(fake, chat):
    gateway = await chat(ScriptedModel({"parent": [[{"text": "hello back"}]]}))
    ask(fake, PRIVATE, "hello")
    await fake.wait_for(lambda: fake.messages[str(PRIVATE)])
    await settled(gateway)
    assert answers(fake, PRIVATE) == [("hello back", None)]
    assert "reply_parameters" not in fake.calls_to("sendMessage")[0]


async def test_the_answer_to_a_message_deleted_meanwhile_still_arrives(fake, chat):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "answer for bob"}]]})
    gateway = await chat(model)
    _, bobs = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    await model.reached("bob")
    fake.delete_user_message(GROUP, bobs)
    model.release("bob")
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    await settled(gateway)
    assert answers(fake, GROUP) == [("answer for bob", None)]  # sent, replying to nothing


async def test_background_results_reply_to_the_message_that_asked_for_them(fake, chat):
    gateway = await chat(delegation={"gateway_mode": "background"})
    _, asked = ask(fake, GROUP, f"@{BOT} Compare these:\n- apples\n- pears", **BOB)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) >= 2, timeout=10)
    await settled(gateway, timeout=10)
    ack, results = fake.messages[str(GROUP)]
    assert "Started 2 subagent" in ack["text"] and "apples: completed" in results["text"]
    assert (ack["reply_to"], results["reply_to"]) == (asked, asked)


async def test_an_answer_journaled_before_a_restart_still_replies_when_sent_after_it(fake, tmp_path):
    # The reply-to is journaled with the part: the process that sends it need not know the turn.
    _, asked = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    path = tmp_path / "state.db"
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    store = GatewayStore(path)
    before = Outbox(store.outbox, {"telegram": adapter})  # never started: the process died before sending
    before.enqueue("telegram", str(GROUP), None, "answer for bob", kind="reply", key="t-1:reply", turn_id="t-1",
                   reply_to=str(asked))
    await before.close()
    store.close()
    store = GatewayStore(path)
    after = Outbox(store.outbox, {"telegram": adapter})
    try:
        await after.start()
        assert await after.flush(timeout=5)
        # The turn replayed after the restart journals its answer again: a no-op, nothing sent twice.
        after.enqueue("telegram", str(GROUP), None, "answer for bob", kind="reply", key="t-1:reply", turn_id="t-1",
                      reply_to=str(asked))
        assert await after.flush(timeout=5)
    finally:
        await after.close()
        store.close()
        await adapter.stop()
    assert answers(fake, GROUP) == [("answer for bob", asked)]


async def test_a_file_that_opens_the_answer_replies_to_the_question(fake, chat, tmp_path):
    # Among several members' requests, a file sent as a plain message is nobody's.
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]},
        {"text": "there you go"},
    ]]})
    gateway = await chat(model, agent={"toolsets": ["file"]})
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    _, asked = ask(fake, GROUP, f"@{BOT} the Q3 numbers please", **BOB)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    document, reply = fake.messages[str(GROUP)]
    assert document["document"]["file_name"] == "q3.csv"
    assert (document["reply_to"], reply["reply_to"]) == (asked, None)  # the answer's first message quotes
    [call] = fake.calls_to("sendDocument")
    assert json.loads(call["reply_parameters"]) == {"message_id": asked, "allow_sending_without_reply": True}


async def test_the_note_that_a_message_waited_quotes_it_as_its_answer_does(fake, chat):
    # The gateway was down when Bob asked: after the restart, several members' old questions are
    # answered one after another, each opened by a note of its age.
    gateway = await chat(ScriptedModel({"parent": [[{"text": "the answer"}]]}), delivery={"late_after": 60})
    update = fake.message_update(GROUP, f"@{BOT} how big is the release?", **BOB)
    update["message"]["date"] -= 2 * 3600  # Telegram held it
    fake.push_update(update)
    asked = update["message"]["message_id"]
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    assert answers(fake, GROUP) == [
        ("⏱ Answering your message from 2 h ago: “@sb_group_test_bot how big is the release?”", asked),
        ("the answer", asked)]


async def test_a_late_answers_note_quotes_what_the_answer_quotes(fake, tmp_path):
    # Sent hours after it was written (the gateway was down), the note says how old "what follows"
    # is; in a group, what follows is Bob's answer, and the note shows it too.
    _, asked = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    clock = FakeClock()
    path = tmp_path / "state.db"
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    store = GatewayStore(path, clock=clock)
    Outbox(store.outbox, {"telegram": adapter}, clock=clock).enqueue(
        "telegram", str(GROUP), None, "answer for bob", kind="reply", key="t-1:reply", turn_id="t-1",
        reply_to=str(asked))
    store.close()
    clock.advance(3 * 3600)
    store = GatewayStore(path, clock=clock)
    outbox = Outbox(store.outbox, {"telegram": adapter}, clock=clock, late_after=60)
    try:
        await outbox.start()
        assert await outbox.flush(timeout=5)
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
    assert answers(fake, GROUP) == [(note_text(3 * 3600), asked), ("answer for bob", asked)]


async def test_a_file_journaled_before_a_restart_keeps_the_quote_when_the_turn_runs_again(fake, chat, tmp_path):
    # The turn runs again after the restart and sends the file again: journaled already, it is not
    # sent twice, and it took the quote then; the reply after it must follow on, not quote again.
    send = {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]}
    cut = ScriptedModel({"parent": [[send, {"wait": "never", "text": "cut short"}]]})
    gateway = await chat(cut, agent={"toolsets": ["file"]})
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    _, asked = ask(fake, GROUP, f"@{BOT} the Q3 numbers please", **BOB)
    await cut.reached("never")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 1)
    await gateway.stop(grace=0)
    gateway = await chat(ScriptedModel({"parent": [[send, {"text": "there you go"}]]}), agent={"toolsets": ["file"]})
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    document, reply = fake.messages[str(GROUP)]
    assert (document["document"]["file_name"], reply["text"]) == ("q3.csv", "there you go")
    assert (document["reply_to"], reply["reply_to"]) == (asked, None)


@pytest.mark.parametrize("reply_journaled", [True, False])
async def test_a_file_the_platform_refuses_leaves_the_quote_to_the_reply_after_it(fake, chat, tmp_path,
                                                                                    reply_journaled):
    # Nobody saw the file that took the quote: the note in its place quotes (as a late note does), and the reply
    # after it opens the answer for the chat, and quotes, whether it was journaled before Telegram refused the file
    # (behind it) or only after.
    send = {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]}
    model = ScriptedModel({"parent": [[send, {"wait": "reply", "text": "there you go"}]]})
    gateway = await chat(model, agent={"toolsets": ["file"]})
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    if reply_journaled:  # the first try waits out a 429 while the reply is journaled behind it
        fake.fail_next("sendDocument", 429, retry_after=1)
    fake.fail_next("sendDocument", 413, description="Request Entity Too Large")
    _, asked = ask(fake, GROUP, f"@{BOT} the Q3 numbers please", **BOB)
    await model.reached("reply")
    if not reply_journaled:
        await fake.wait_for(lambda: gateway.store.outbox.counts()["failed"] == 1)
    else:
        await fake.wait_for(lambda: fake.calls_to("sendDocument"))
    model.release("reply")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2, timeout=15)  # paced: the refusals count
    await settled(gateway)
    assert answers(fake, GROUP) == [(NOTE, asked), ("there you go", asked)]
    assert gateway.store.outbox.counts()["failed"] == 1


async def test_after_the_note_that_a_message_waited_a_refused_file_still_leaves_the_quote_to_the_reply(
        fake, chat, tmp_path):
    # The note quotes Bob's message and leaves the quote to the answer: it spent nothing of it.
    send = {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]}
    model = ScriptedModel({"parent": [[send, {"wait": "reply", "text": "there you go"}]]})
    gateway = await chat(model, agent={"toolsets": ["file"]}, delivery={"late_after": 60})
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    fake.fail_next("sendDocument", 413, description="Request Entity Too Large")
    update = fake.message_update(GROUP, f"@{BOT} the Q3 numbers please", **BOB)
    update["message"]["date"] -= 2 * 3600  # Telegram held it
    fake.push_update(update)
    asked = update["message"]["message_id"]
    await model.reached("reply")
    await fake.wait_for(lambda: gateway.store.outbox.counts()["failed"] == 1, timeout=15)
    model.release("reply")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 3, timeout=15)
    await settled(gateway)
    [(note, quoted), missing, reply] = answers(fake, GROUP)
    assert note.startswith("⏱ Answering your message from 2 h ago") and quoted == asked
    assert missing == (NOTE, asked)
    assert reply == ("there you go", asked)
