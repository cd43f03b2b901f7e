"""On Telegram (aiogram against the loopback fake): a turn whose question is in the chat, stopped before its progress
card is due by a message that is no answer (a photo: handled as a message of its own, in `interrupt` mode stopping the
turn), says so: else the question stood above the photo's answer as if it still waited."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_telegram_bursts import PNG

STOPPED_FOR_NEXT = "⏹ Stopped for your next message"
QUESTION = "Which report, the March one or the April one?"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # requested first: it outlives the gateways
        yield fake


async def test_a_turn_stopped_while_its_question_waits_in_the_chat_says_it_was_stopped(fake, telegram_gateways):
    asking = {"tool_calls": [{"name": "clarify", "arguments": {"question": QUESTION}}]}
    model = ScriptedModel({"parent": [[asking, {"hang": True}], [{"text": "a chart of sales"}]]})
    gateway = await telegram_gateways(fake, model, progress_delay=30)
    fake.push_message(42, "summarise the report")
    await fake.wait_for(lambda: any(QUESTION in m["text"] for m in fake.messages["42"]))
    fake.push_photo(42, PNG, caption="what is this?")
    await fake.wait_for(lambda: any(m["text"] == "a chart of sales" for m in fake.messages["42"]))
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway)
    texts = [m["text"] for m in fake.messages["42"]]
    assert QUESTION in texts[0] and texts[1:] == [STOPPED_FOR_NEXT, "a chart of sales"]
