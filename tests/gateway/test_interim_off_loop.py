"""The model's text beside its tool calls (an interim message) is split, and a text past its platform's bound kept
as ``answer.md``, in a worker thread (`Outbox.enqueue_long`), the turn going on once it is journaled: it keeps its
place before the turn's reply; a /stop meanwhile keeps it from the chat, as it keeps the turn's reply; refused by
the store, the message it would have quoted is quoted by the reply."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.gateway.test_interim_refused import CHECKING
from tests.gateway.test_long_messages import TEXT, TakesFiles
from tests.gateway.test_long_messages_sync_paths import Held

CONFIG = {"display": {"interim_assistant_messages": True, "max_message_parts": 3}}
SCRIPT = {"parent": [[{"text": TEXT, "tool_calls": [{"name": "list_files", "arguments": {}}]},
                      {"text": "All done."}]]}


async def held_interim(tmp_path, gateways, monkeypatch):
    copies = Held(monkeypatch)
    chat = TakesFiles()
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], script=SCRIPT)
    await chat.say("check")
    assert await asyncio.to_thread(copies.writing.wait, 5)
    return gateway, chat, copies


async def test_a_long_interim_message_is_written_while_the_loop_serves_other_chats_and_goes_before_the_reply(
        tmp_path, gateways, monkeypatch):
    gateway, chat, copies = await held_interim(tmp_path, gateways, monkeypatch)
    assert await asyncio.ensure_future(asyncio.sleep(0, "another chat")) == "another chat"
    assert chat.texts() == []  # nothing names the copy before it is there
    copies.release.set()
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert copies.released == [True]
    *interims, reply = chat.kinds()
    assert set(interims) == {"interim"} and reply == "reply"
    assert chat.files[0][1:] == ("answer.md", TEXT.rstrip().encode())


async def test_an_interim_message_split_when_the_turn_is_stopped_is_not_sent(tmp_path, gateways, monkeypatch):
    gateway, chat, copies = await held_interim(tmp_path, gateways, monkeypatch)
    await chat.say("/stop")
    copies.release.set()
    await settled(gateway)
    assert copies.released == [True]
    assert "interim" not in chat.kinds() and chat.files == []


async def test_an_interim_message_the_full_disk_refuses_gives_its_quote_to_the_reply(tmp_path, gateways):
    model = ScriptedModel({"parent": [[CHECKING, {"text": "no files here"}]]})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    no_room(gateway.store.db, "NEW.kind = 'interim'", "gateway_outbox")
    await chat.say("hello", event_id="e1", private=False, message_id="m1")
    await chat.wait_for(lambda: chat.texts("reply"))
    await settled(gateway)
    room(gateway.store.db)
    [reply] = chat.messages
    assert reply.text == "no files here" and reply.outbound.reply_to == "m1"
    assert gateway.store.inbox.settled("chat", "e1")
