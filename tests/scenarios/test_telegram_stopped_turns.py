"""On Telegram (aiogram against the loopback fake): what the chat shows of a turn that a stop ends before its
progress card is due (`display.progress_delay`, 2 s by default), against one whose card showed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

STOPPED_FOR_NEXT = "⏹ Stopped for your next message"  # the line a shown card comes to read
INTERIM = "Let me read the report first."
AT_WORK = [{"text": INTERIM, "tool_calls": [{"name": "list_files", "arguments": {}}]}, {"hang": True}]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # requested first: it outlives the gateways
        yield fake


async def chat_after(fake, telegram_gateways, first_turn: list[dict], second: str, *, shown: str,
                     progress_delay: float = 30) -> list[dict]:
    """Run ``first_turn`` for "a long task", wait until the chat shows ``shown`` of it (typing, the interim text,
    the card), send ``second``, and return the chat's messages once everything settled."""
    model = ScriptedModel({"parent": [first_turn, [{"text": "the answer to the next message"}]]})
    gateway = await telegram_gateways(fake, model, progress_delay=progress_delay)
    fake.push_message(42, "a long task")
    if shown == "typing":
        await fake.wait_for(lambda: fake.calls_to("sendChatAction"))
    else:
        await fake.wait_for(lambda: any(m["text"].startswith(shown) for m in fake.messages["42"]))
    fake.push_message(42, second)
    await fake.wait_for(lambda: any(m["text"].startswith(("the answer", "Stopped the running turn"))
                                    for m in fake.messages["42"]))
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway)
    return fake.messages["42"]


async def test_a_turn_the_next_message_stops_after_its_interim_text_but_before_its_card_says_it_was_stopped(
        fake, telegram_gateways):
    """The chat read the turn at work ("Let me read the report first.") and then only the next message's answer:
    the report, it seemed, was still to come. Stopped after its card showed, the card read the line below."""
    chat = await chat_after(fake, telegram_gateways, AT_WORK, "what time is it in Tokyo?", shown=INTERIM)
    assert [m["text"] for m in chat] == [INTERIM, STOPPED_FOR_NEXT, "the answer to the next message"]


async def test_a_turn_the_next_message_stops_before_it_showed_anything_adds_no_line(fake, telegram_gateways):
    """Typing went on into the next answer, which the model wrote reading both messages: nothing was left hanging."""
    chat = await chat_after(fake, telegram_gateways, [{"hang": True}], "and in Lisbon?", shown="typing")
    assert [m["text"] for m in chat] == ["the answer to the next message"]


@pytest.mark.parametrize(("first_turn", "shown"), [([{"hang": True}], "typing"), (AT_WORK, INTERIM)])
async def test_stop_before_the_card_is_answered_by_its_confirmation_alone(fake, telegram_gateways, first_turn, shown):
    chat = await chat_after(fake, telegram_gateways, first_turn, "/stop", shown=shown)
    assert [m["text"] for m in chat][-1:] == ["Stopped the running turn."]
    assert STOPPED_FOR_NEXT not in [m["text"] for m in chat] and len(chat) == (1 if shown == "typing" else 2)


async def test_a_turn_the_next_message_stops_after_its_card_showed_says_so_once_on_its_card(fake, telegram_gateways):
    chat = await chat_after(fake, telegram_gateways, AT_WORK, "what time is it in Tokyo?", shown="⏳",
                            progress_delay=0.05)
    texts = [m["text"] for m in chat]
    assert texts.count(STOPPED_FOR_NEXT) == 1 and texts[-1] == "the answer to the next message"
    card = next(m for m in chat if m["text"] == STOPPED_FOR_NEXT)
    assert card["edits"]  # the card's own final line, not a message of its own
