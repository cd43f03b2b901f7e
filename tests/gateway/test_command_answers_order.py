"""Two plugin commands in a row in one chat: the first's long answer, split and its ``answer.md`` written in a
worker thread (`gateway.command_answers.CommandAnswers._answer_long`), is not overtaken by the second's short one,
which waits for it in the chat's line (`gateway.outbox.Outbox.enqueue_long`)."""

from __future__ import annotations

import asyncio

from gateway.testing import make_config, settled
from tests.gateway.test_long_messages import TEXT, TakesFiles
from tests.gateway.test_long_messages_sync_paths import PLUGIN, Held
from tests.plugin_modules import plugin_module


async def test_a_short_answer_waits_for_the_long_answer_of_the_command_before_it(tmp_path, gateways, monkeypatch):
    plugin = plugin_module(tmp_path, monkeypatch, "dumping_plugin", PLUGIN)
    copies = Held(monkeypatch)
    chat = TakesFiles()
    gateway = await gateways(make_config(tmp_path, plugins=["dumping_plugin"], display={"max_message_parts": 3}),
                             [chat], script={"parent": [[{"text": "x"}]]})
    await chat.say("/dump " + TEXT, event_id="ev-long")
    assert await asyncio.to_thread(copies.writing.wait, 5)  # the first's answer.md is being written
    await chat.say("/dump short", event_id="ev-short")
    await chat.wait_for(lambda: plugin.runs == [TEXT.rstrip(), "short"])
    for _ in range(5):
        await asyncio.sleep(0)
    assert not gateway.store.outbox.has_message("cmd-chat-ev-short:0")  # in the chat's line, behind the first
    copies.release.set()
    await chat.wait_for(lambda: len(chat.files) == 1 and "short" in chat.texts())
    await settled(gateway)
    assert chat.texts()[-1] == "short" and len(chat.texts()) == 5
    assert gateway.store.inbox.settled("chat", "ev-long") and gateway.store.inbox.settled("chat", "ev-short")
