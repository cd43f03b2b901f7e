"""On Telegram (aiogram against the loopback fake), with ``display.progress_final: delete``: what the chat keeps of a
turn stopped after its progress card showed. Deleted, the card took the only word of the stop with it, and "Let me
read the report first." stood above the next message's answer, the report seemingly still to come."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

STOPPED_FOR_NEXT = "⏹ Stopped for your next message"
INTERIM = "Let me read the report first."
AT_WORK = [{"text": INTERIM, "tool_calls": [{"name": "list_files", "arguments": {}}]}, {"hang": True}]
ANSWER = "the answer to the next message"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # requested first: it outlives the gateway
        yield fake


@pytest.fixture
async def chat_after(fake, tmp_path) -> AsyncIterator[Callable[..., Awaitable[list[dict]]]]:
    """``await chat_after(first_turn, second, shown=...)``: run ``first_turn`` for "a long task" on a gateway whose
    cards show at once, wait until the chat shows each of ``shown`` (starts of messages), send ``second``, and return
    the chat's messages once everything settled."""
    started: list[Gateway] = []

    async def run(first_turn: list[dict], second: str, *, shown: tuple[str, ...]) -> list[dict]:
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}},
                             display={"progress_final": "delete", "progress_delay": 0.05})
        model = ScriptedModel({"parent": [first_turn, [{"text": ANSWER}]]})
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        started.append(gateway)
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))  # polling is live
        return await _chat_after(fake, gateway, second, shown)

    yield run
    for gateway in started:
        await gateway.stop(grace=0)


async def _chat_after(fake: FakeTelegram, gateway: Gateway, second: str, shown: tuple[str, ...]) -> list[dict]:
    fake.push_message(42, "a long task")
    await fake.wait_for(lambda: all(any(m["text"].startswith(s) for m in fake.messages["42"]) for s in shown))
    fake.push_message(42, second)
    await fake.wait_for(lambda: any(m["text"].startswith((ANSWER, "Stopped the running turn"))
                                    for m in fake.messages["42"]))
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway)
    return fake.messages["42"]


async def test_a_turn_the_next_message_stops_after_its_interim_text_and_card_keeps_its_card_as_the_stop_line(
        chat_after):
    chat = await chat_after(AT_WORK, "what time is it in Tokyo?", shown=(INTERIM, "⏳"))
    assert [m["text"] for m in chat] == [INTERIM, STOPPED_FOR_NEXT, ANSWER]
    assert chat[1]["edits"]  # the card's own final line: one progress message for the turn, not a second


async def test_a_turn_the_next_message_stops_after_its_card_alone_leaves_nothing(chat_after):
    """Nothing of the turn stays in the chat but typing, which went on into the next answer: no line for it."""
    chat = await chat_after([{"hang": True}], "and in Lisbon?", shown=("⏳",))
    assert [m["text"] for m in chat] == [ANSWER]


async def test_stop_after_the_card_deletes_it_and_its_confirmation_says_it(chat_after):
    chat = await chat_after(AT_WORK, "/stop", shown=(INTERIM, "⏳"))
    assert [m["text"] for m in chat] == [INTERIM, "Stopped the running turn."]


async def test_a_turn_the_next_message_stops_after_its_send_message_keeps_its_card_as_the_stop_line(chat_after):
    """A ``send_message``'s parts carry no turn id: found by their key, else "on it" stood above the next answer."""
    sending = [{"tool_calls": [{"name": "send_message", "arguments": {"text": "on it"}}]}, {"hang": True}]
    chat = await chat_after(sending, "and in Lisbon?", shown=("on it", "⏳"))
    assert [m["text"] for m in chat] == ["on it", STOPPED_FOR_NEXT, ANSWER]
