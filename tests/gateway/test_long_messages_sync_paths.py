"""Texts past their platform's bound (`gateway.long_messages`) that reached the outbox by `Outbox.enqueue`, which
splits and writes ``answer.md``'s copy on the event loop (10 MB: every chat held some 100 ms, seconds heavy with
formatting): a plugin command's answer is split and written in a worker thread (`Outbox.enqueue_long`), as a
model's reply is."""

from __future__ import annotations

import asyncio
import threading

import pytest

from gateway.long_messages import FILE_PART
from gateway.outbox_files import OutboxFiles
from gateway.testing import make_config, settled
from tests.gateway.test_long_messages import TEXT, TakesFiles
from tests.plugin_modules import plugin_module

PLUGIN = """\
runs = []

async def dump(args, context):
    runs.append(args)
    return args

def register(ctx):
    ctx.register_command("dump", dump)
"""


class Held:
    """`OutboxFiles.keep_bytes` held before it writes until ``release`` (at most 2 s: held on the event loop,
    nothing could release it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.writing, self.release = threading.Event(), threading.Event()
        self.released: list[bool] = []
        """Per copy, whether it was released while held, not let go by the timeout."""
        keep = OutboxFiles.keep_bytes

        def held(files: OutboxFiles, *args) -> int:
            self.writing.set()
            self.released.append(self.release.wait(2))
            return keep(files, *args)

        monkeypatch.setattr(OutboxFiles, "keep_bytes", held)


async def test_a_plugin_commands_long_answer_is_written_while_the_loop_serves_other_chats(
        tmp_path, gateways, monkeypatch):
    # Before, answered by `enqueue`, its copy was written on the loop: held, nothing could release it.
    plugin = plugin_module(tmp_path, monkeypatch, "dumping_plugin", PLUGIN)
    copies = Held(monkeypatch)
    chat = TakesFiles()
    gateway = await gateways(make_config(tmp_path, plugins=["dumping_plugin"], display={"max_message_parts": 3}),
                             [chat], script={"parent": [[{"text": "x"}]]})
    answer = asyncio.ensure_future(chat.say("/dump " + TEXT, event_id="ev-dump"))
    assert await asyncio.to_thread(copies.writing.wait, 5)
    assert await asyncio.ensure_future(asyncio.sleep(0, "another chat")) == "another chat"
    assert not gateway.store.outbox.has_message("cmd-chat-ev-dump:0")  # nothing names the copy before it is there
    copies.release.set()
    await answer
    await chat.wait_for(lambda: len(chat.files) == 1)
    await settled(gateway)
    assert copies.released == [True]
    assert len(chat.texts()) == 4 and chat.files[0][1:] == ("answer.md", TEXT.rstrip().encode())
    assert gateway.store.inbox.settled("chat", "ev-dump") and plugin.runs == [TEXT.rstrip()]


async def test_a_plugin_answer_cancelled_at_a_stop_while_it_is_written_is_journaled_and_its_event_settled(
        tmp_path, gateways, monkeypatch):
    # Cancelled with nothing journaled, its event would be handled again after the next start: the handler, whose
    # work is done (a deploy), run twice.
    plugin = plugin_module(tmp_path, monkeypatch, "dumping_plugin", PLUGIN)
    copies = Held(monkeypatch)
    gateway = await gateways(make_config(tmp_path, plugins=["dumping_plugin"], display={"max_message_parts": 3}),
                             [TakesFiles()], script={"parent": [[{"text": "x"}]]})
    answer = asyncio.ensure_future(gateway.adapters["chat"].say("/dump " + TEXT, event_id="ev-dump"))
    assert await asyncio.to_thread(copies.writing.wait, 5)
    [task] = gateway._answers.aside
    task.cancel()
    await asyncio.sleep(0)
    copies.release.set()
    await answer
    await asyncio.wait([task])
    assert gateway.store.outbox.message("cmd-chat-ev-dump" + FILE_PART).op == "file"
    assert gateway.store.inbox.settled("chat", "ev-dump") and plugin.runs == [TEXT.rstrip()]
