"""Topics in a bot's private chat (Bot API 9.3: topic mode on in BotFather) end to end: the real aiogram client in
`TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway`. Each topic is a session of its own,
as a forum's is: the bot types and answers in the topic it was asked in, and a ``/stop`` in one topic leaves the
other topic's turn running."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

USER = 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(topics_in_private=True) as fake:
        yield fake


def answers(request) -> dict:
    """Topic 7's question waits at a gate; anything else is answered at once."""
    asked = str(request.messages[-1].get("content"))
    return {"wait": "7", "text": "answer in 7"} if "in 7" in asked else {"text": "answer in 9"}


def said(fake: FakeTelegram) -> list[tuple[int | None, str]]:
    return [(m["thread_id"], m["text"]) for m in fake.messages[str(USER)]]


async def test_each_topic_of_a_private_chat_is_answered_in_itself_and_stopped_on_its_own(fake, telegram_gateways):
    model = ScriptedModel({"parent": answers})
    gateway = await telegram_gateways(fake, model, progress="off")
    fake.push_message(USER, "a question in 7", thread_id=7)
    await model.reached("7")
    fake.push_message(USER, "a question in 9", thread_id=9)
    await fake.wait_for(lambda: said(fake))
    fake.push_message(USER, "/stop", thread_id=9)  # topic 9 has nothing running: topic 7's turn goes on
    await fake.wait_for(lambda: len(said(fake)) == 2)
    model.release("7")
    await fake.wait_for(lambda: len(said(fake)) == 3)
    await settled(gateway)
    assert said(fake) == [(9, "answer in 9"), (9, "Nothing was running."), (7, "answer in 7")]
    assert "7" in {call.get("message_thread_id") for call in fake.calls_to("sendChatAction")}
