"""A forum supergroup's topics end to end: the real aiogram client in `TelegramAdapter` against the loopback
`FakeTelegram`, with the real `Gateway` behind it. Each topic is a session of its own: the bot types and answers
in the topic it was asked in, quoting the question, and a ``/stop`` in one topic leaves another topic's turn
running, as ``/stop@another_bot`` leaves every turn."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

BOT = "sb_topic_test_bot"
FORUM = -1001
BOB = dict(chat_type="supergroup", user_id=5, username="bob")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def answers(request) -> dict:
    """Topic 77's question waits at a gate; anything else is answered at once."""
    asked = str(request.messages[-1].get("content"))
    return {"wait": "77", "text": "answer in 77"} if "in 77" in asked else {"text": "answer in 88"}


def said(fake: FakeTelegram) -> list[tuple[int | None, str, str]]:
    """The bot's messages in the forum: their topic, the text they quote, and their own."""
    asked = fake.said[str(FORUM)]
    return [(m["thread_id"], asked[m["reply_to"]]["text"], m["text"]) for m in fake.messages[str(FORUM)]]


async def test_each_topic_is_answered_in_itself_and_a_stop_in_one_leaves_the_other_running(fake, telegram_gateways):
    model = ScriptedModel({"parent": answers})
    # No progress card: under load topic 77's (due at 2 s) went first, quoting nothing `said` could read.
    gateway = await telegram_gateways(fake, model, progress="off")
    fake.push_message(FORUM, f"@{BOT} a question in 77", thread_id=77, **BOB)
    await model.reached("77")
    fake.push_message(FORUM, f"@{BOT} a question in 88", thread_id=88, **BOB)
    await fake.wait_for(lambda: fake.messages[str(FORUM)])  # while 77's turn runs
    fake.push_message(FORUM, "/stop@another_bot", thread_id=77, **BOB)  # not ours
    fake.push_message(FORUM, "/stop", thread_id=88, **BOB)  # topic 88 has nothing running
    await fake.wait_for(lambda: len(said(fake)) == 2)
    model.release("77")
    await fake.wait_for(lambda: len(said(fake)) == 3)
    await settled(gateway)
    assert said(fake) == [
        (88, f"@{BOT} a question in 88", "answer in 88"),
        (88, "/stop", "Nothing was running."),
        (77, f"@{BOT} a question in 77", "answer in 77"),
    ]
    typing = {call.get("message_thread_id") for call in fake.calls_to("sendChatAction")}
    assert typing <= {"77", "88"} and "77" in typing
