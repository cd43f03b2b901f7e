"""A model's long reply (or send_message) is split in a worker thread: the gateway keeps serving
every chat meanwhile, and the parts are journaled whole and in order."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent.models.scripted import ScriptedModel
from gateway.replies import EMPTY_ANSWER
from gateway.splitting import split_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.polling import until

MEASURE_SECONDS = 0.03
"""What one measure of a part costs on the adapter below: a rendering measure, heavy formatting."""


class SlowMeasure(RecordingAdapter):
    """Measures as slowly as Telegram renders a part dense with formatting, blocking its thread."""

    def __init__(self) -> None:
        super().__init__(text_limit=1000)
        self.measured = 0
        self.on_the_loop = 0
        """Measures made on the event loop's thread (the main one), which every chat waited for."""

    def measure(self, text: str) -> int:
        time.sleep(MEASURE_SECONDS)
        self.measured += 1
        self.on_the_loop += threading.current_thread() is threading.main_thread()
        return len(text)


@pytest.mark.parametrize("how", ["reply", "send_message"])
async def test_a_long_reply_is_split_without_stalling_the_gateway(tmp_path, gateways, how):
    text = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(60))  # ~13 KB
    parts = split_text(text, 1000)
    turn = ([{"tool_calls": [{"name": "send_message", "arguments": {"text": text}}]}, {"text": "done"}]
            if how == "send_message" else [{"text": text}])
    chat = SlowMeasure()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [turn]}))
    await chat.say("write a lot")
    await chat.wait_for(lambda: len(chat.texts()) >= len(parts) + (how == "send_message"), timeout=30)
    await settled(gateway)
    assert chat.measured * MEASURE_SECONDS > 0.5  # the split took that long, in all
    # counted, not timed (a loaded machine): the split's measures ran in a worker thread
    assert chat.on_the_loop <= 2, f"{chat.on_the_loop} of {chat.measured} measures stalled the event loop"
    assert chat.texts() == parts + (["done"] if how == "send_message" else [])


class CountingCharacters(RecordingAdapter):
    """Measures with ``len``, as the webhook, web and terminal adapters do, and says so."""

    counts_characters = True

    def __init__(self) -> None:
        super().__init__(text_limit=1000)
        self.measured_in: list[threading.Thread] = []

    def measure(self, text: str) -> int:
        self.measured_in.append(threading.current_thread())
        return len(text)


async def test_a_reply_that_fits_an_adapter_counting_characters_takes_no_worker_thread(tmp_path, gateways):
    # A thread's hop cost each webhook turn more than its split (about 6 % of its instructions), for nothing to render.
    long = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))
    chat = CountingCharacters()
    gateway = await gateways(make_config(tmp_path), [chat],
                             model=ScriptedModel({"parent": [[{"text": "short"}], [{"text": long}]]}))
    await chat.say("a short one")
    await chat.wait_for(lambda: chat.texts() == ["short"])
    assert chat.measured_in == [threading.main_thread()]
    chat.measured_in.clear()
    await chat.say("a long one")  # over the limit: split where its measures keep no chat waiting
    await chat.wait_for(lambda: len(chat.texts()) > 1)
    await settled(gateway)
    assert chat.texts() == ["short", *split_text(long, 1000)]
    assert chat.measured_in and threading.main_thread() not in chat.measured_in


async def test_a_send_message_the_journal_refused_does_not_count_as_said(tmp_path, gateways):
    # The model's message cannot be journaled (a full disk); it then ends without an answer.
    turn = [{"tool_calls": [{"name": "send_message", "arguments": {"text": "here it is"}}]}, {"text": ""}]
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [turn]}))
    gateway.store.db.write("CREATE TRIGGER refuse BEFORE INSERT ON gateway_outbox WHEN NEW.kind = 'interim'"
                           " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    await chat.say("send me it")
    await chat.wait_for(lambda: chat.texts(), timeout=10)
    await settled(gateway)
    assert chat.texts() == [EMPTY_ANSWER]  # nothing reached the chat, so the turn's missing answer is said


class HeldSplit(RecordingAdapter):
    """Holds a split made in a worker thread (a model's long reply) until released."""

    def __init__(self) -> None:
        super().__init__(text_limit=1000)
        self.splitting = threading.Event()
        self.release = threading.Event()

    def measure(self, text: str) -> int:
        if threading.current_thread() is not threading.main_thread():
            self.splitting.set()
            assert self.release.wait(10)
        return len(text)


async def test_a_stop_while_the_reply_is_split_comes_after_the_reply(tmp_path, gateways):
    # It said "Stopped the running turn." and the whole reply followed it; a background task's results
    # (a completion turn) were delivered too, recorded as not delivered (/stop). Then it said "Nothing was
    # running." first, and the reply it had not stopped followed it.
    text = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))
    chat = HeldSplit()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [[{"text": text}]]}))
    await chat.say("write a lot")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    stop = asyncio.ensure_future(chat.say("/stop", event_id="the-stop"))
    # Begun, it has found the reply being journaled (nothing between the two yields to the loop).
    await until(lambda: stop.done() or ("chat", "the-stop") in gateway.store.inbox.begun())
    chat.release.set()
    await stop
    await chat.wait_for(lambda: "Nothing was running." in chat.texts())
    await settled(gateway)
    assert chat.texts() == [*split_text(text, 1000), "Nothing was running."]  # the turn had answered
