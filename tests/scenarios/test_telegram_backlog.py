"""Telegram's backlog after an outage, under the default `display.busy_input_mode: interrupt`, through
the real aiogram client in `TelegramAdapter` against the loopback `FakeTelegram`: what the user sent
while the gateway was down is handed over back to back after the restart. A later message of it must
not stop the turn of an earlier one, which the user never saw begin: each is answered, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

CHAT = 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def send(fake: FakeTelegram, text: str, *, ago: int = 0) -> int:
    """The user wrote ``text`` ``ago`` seconds before Telegram hands it over; returns the update id."""
    update = fake.message_update(CHAT, text)
    update["message"]["date"] -= ago
    return fake.push_update(update)


def taken(gateway: Gateway, update_id: int) -> bool:
    """The gateway has taken the update's message: it waits for its turn, runs it, or has answered it."""
    event = f"{gateway.adapters['telegram'].bot.id}:{update_id}"  # Telegram numbers each bot's on its own
    return gateway.store.inbox.settled("telegram", event) or any(
        e is not None and e.event_id == event for session in gateway.sessions
        for e in (*(item.event for item in session.queue), session.running and session.running.event))


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages[str(CHAT)]]


async def test_messages_sent_while_the_gateway_was_down_are_each_answered_in_order(fake, telegram_gateways):
    # A real model takes seconds: the first message's turn runs when the second is handed over.
    model = ScriptedModel({"parent": [[{"wait": "deploying", "text": "deployed"}], [{"text": "the logs are clean"}]]})
    send(fake, "deploy the app", ago=60)
    gateway = await telegram_gateways(fake, model)
    await model.reached("deploying")
    later = send(fake, "and check the logs", ago=59)  # the rest of the backlog, in the next getUpdates
    await fake.wait_for(lambda: taken(gateway, later))
    model.release("deploying")
    await fake.wait_for(lambda: "the logs are clean" in texts(fake))
    await settled(gateway)
    assert texts(fake) == ["deployed", "the logs are clean"]


async def test_a_message_written_while_the_turn_runs_still_stops_it(fake, telegram_gateways):
    # Telegram dates a message in whole seconds: one written just after the turn began may seem older.
    model = ScriptedModel({"parent": [[{"wait": "deploying", "text": "deployed"}], [{"text": "not deploying"}]]})
    gateway = await telegram_gateways(fake, model)
    send(fake, "deploy the app")
    await model.reached("deploying")
    send(fake, "no, wait")
    await fake.wait_for(lambda: texts(fake))
    model.release("deploying")
    await settled(gateway)
    assert texts(fake) == ["not deploying"]
