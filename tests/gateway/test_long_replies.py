"""A model's long reply (or send_message) is split in a worker thread: the gateway keeps serving
every chat meanwhile, and the parts are journaled whole and in order."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent.models.scripted import ScriptedModel
from gateway.splitting import split_text
from gateway.testing import RecordingAdapter, make_config, settled

MEASURE_SECONDS = 0.03
"""What one measure of a part costs on the adapter below: a rendering measure, heavy formatting."""


class SlowMeasure(RecordingAdapter):
    """Measures as slowly as Telegram renders a part dense with formatting, blocking its thread."""

    def __init__(self) -> None:
        super().__init__(text_limit=1000)
        self.measured = 0

    def measure(self, text: str) -> int:
        time.sleep(MEASURE_SECONDS)
        self.measured += 1
        return len(text)


async def stalls_while(done: asyncio.Event) -> float:
    """The longest the event loop went without running this task, until ``done``."""
    longest = 0.0
    while not done.is_set():
        before = time.monotonic()
        await asyncio.sleep(0.002)
        longest = max(longest, time.monotonic() - before)
    return longest


@pytest.mark.parametrize("how", ["reply", "send_message"])
async def test_a_long_reply_is_split_without_stalling_the_gateway(tmp_path, gateways, how):
    text = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(60))  # ~13 KB
    parts = split_text(text, 1000)
    turn = ([{"tool_calls": [{"name": "send_message", "arguments": {"text": text}}]}, {"text": "done"}]
            if how == "send_message" else [{"text": text}])
    chat = SlowMeasure()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [turn]}))
    done = asyncio.Event()
    watch = asyncio.ensure_future(stalls_while(done))
    await chat.say("write a lot")
    await chat.wait_for(lambda: len(chat.texts()) >= len(parts) + (how == "send_message"), timeout=30)
    done.set()
    longest = await watch
    await settled(gateway)
    assert chat.measured * MEASURE_SECONDS > 0.5  # the split took that long, in all
    assert longest < 0.25, f"the event loop stalled {longest:.2f} s"
    assert chat.texts() == parts + (["done"] if how == "send_message" else [])
