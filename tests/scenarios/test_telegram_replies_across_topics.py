"""In a Telegram forum, a member replies to the bot's message from another topic (Telegram's "reply in another
chat", the same forum's topic picked), through the real aiogram client against the loopback `FakeTelegram`.

The Bot API shows such a reply as ``external_reply`` ("from another chat or forum topic"), not as
``reply_to_message``: it is a reply to the bot all the same, so it addresses the bot, and it is answered in the
topic it was written in, quoting it. A reply across topics to another member's message addresses no one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_group_turns import BOB, BOT, CAROL, GROUP

ASKED_IN, REPLIED_FROM = 7, 9
"""The topic Bob asks in, and the one Carol replies from."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def ask(fake: FakeTelegram, text: str, who: dict, **kw) -> int:
    """A member writes ``text`` in the forum: its message id."""
    update = fake.message_update(GROUP, text, **who, **kw)
    fake.push_update(update)
    return update["message"]["message_id"]


def test_the_fake_shows_a_reply_from_another_topic_as_telegram_does(fake):
    answer = {"message_id": 50, "date": 1, "text": "it is 2 GB", "entities": [], "thread_id": ASKED_IN}
    fake.messages[str(GROUP)].append(answer)  # the bot's answer, in the topic Bob asked in
    fake.message_update(GROUP, "hello", **BOB, thread_id=ASKED_IN)  # the group is a forum
    message = fake.message_update(GROUP, "and the docs?", **CAROL, thread_id=REPLIED_FROM, reply_to=50)["message"]
    assert "reply_to_message" not in message
    assert (message["message_thread_id"], message["is_topic_message"]) == (REPLIED_FROM, True)
    assert message["external_reply"] == {"origin": {"type": "user", "date": 1, "sender_user": fake.bot_user},
                                         "chat": message["chat"], "message_id": 50}


async def test_a_reply_to_the_bots_answer_from_another_topic_is_answered_in_that_topic(fake, telegram_gateways):
    model = ScriptedModel({"parent": lambda request: {"text": f"answer to {request.messages[-1]['content']}"}})
    gateway = await telegram_gateways(fake, model)
    ask(fake, f"@{BOT} how big is the release?", BOB, thread_id=ASKED_IN)
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    [answer] = fake.messages[str(GROUP)]
    carols = ask(fake, "and the docs?", CAROL, thread_id=REPLIED_FROM, reply_to=answer["message_id"])
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2, timeout=10)  # 3 s apart in a group
    await settled(gateway)
    second = fake.messages[str(GROUP)][1]
    assert (second["text"], second["thread_id"], second["reply_to"]) == ("answer to [@carol] and the docs?",
                                                                     REPLIED_FROM, carols)


async def test_a_reply_from_another_topic_to_another_members_message_is_not_for_the_bot(fake, telegram_gateways):
    model = ScriptedModel({"parent": [[{"text": "answered"}]]})
    gateway = await telegram_gateways(fake, model)
    bobs = ask(fake, "anyone seen the release notes?", BOB, thread_id=ASKED_IN)
    ask(fake, "here they are", CAROL, thread_id=REPLIED_FROM, reply_to=bobs)
    ask(fake, f"@{BOT} hello", CAROL, thread_id=REPLIED_FROM)  # something that is answered, to wait for
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    await settled(gateway)
    assert [m["text"] for m in fake.messages[str(GROUP)]] == ["answered"] and len(model.requests) == 1
