"""`Inbound.reply_to` of Telegram messages: the message a reply replies to, by the id the gateway keeps for it; none
for the head of a thread, which Telegram gives every message of a forum topic or a post's comments as
``reply_to_message``. The real aiogram client inside `TelegramAdapter` against `FakeTelegram` over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

BOT = "switchboard_bot"
GROUP, FORUM, CHANNEL = -1001, -1002, -1003
BOB = dict(chat_type="supergroup", user_id=5, username="bob")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def sink(fake: FakeTelegram) -> AsyncIterator[Sink]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [])
    yield sink
    await adapter.stop()


def written(fake: FakeTelegram, chat: int, text: str, **kw) -> int:
    update = fake.message_update(chat, text, **BOB, **kw)
    fake.push_update(update)
    return update["message"]["message_id"]


async def test_a_reply_names_the_message_it_replies_to_and_a_plain_message_none(fake: FakeTelegram,
                                                                                 sink: Sink) -> None:
    other = written(fake, GROUP, "the staging box is down")
    written(fake, GROUP, f"@{BOT} look at this", reply_to=other)
    written(fake, GROUP, f"@{BOT} hello")
    await fake.wait_for(lambda: len(sink.inbound) == 2)
    assert [(i.text, i.reply_to) for i in sink.inbound] == [(f"@{BOT} look at this", str(other)),
                                                           (f"@{BOT} hello", None)]


async def test_the_head_of_a_topic_or_of_a_posts_comments_is_replied_to_by_none(fake: FakeTelegram,
                                                                                 sink: Sink) -> None:
    in_topic = fake.message_update(FORUM, f"@{BOT} in the topic", **BOB, thread_id=77)
    in_topic["message"]["reply_to_message"] = {  # as Telegram sends every message of a topic
        "message_id": 77, "date": in_topic["message"]["date"], "chat": in_topic["message"]["chat"],
        "from": in_topic["message"]["from"], "message_thread_id": 77, "is_topic_message": True,
        "forum_topic_created": {"name": "Releases", "icon_color": 7322096}}
    fake.push_update(in_topic)
    in_topic_reply = written(fake, FORUM, "a member's message", thread_id=77)
    written(fake, FORUM, f"@{BOT} about that", thread_id=77, reply_to=in_topic_reply)
    post = fake.message_update(GROUP, "a post", chat_type="supergroup", sender_chat=CHANNEL, automatic_forward=True)
    fake.push_update(post)
    written(fake, GROUP, f"@{BOT} a comment", reply_to=post["message"]["message_id"])
    await fake.wait_for(lambda: len(sink.inbound) == 3)
    assert [(i.text, i.reply_to) for i in sink.inbound] == [
        (f"@{BOT} in the topic", None), (f"@{BOT} about that", str(in_topic_reply)), (f"@{BOT} a comment", None)]


@pytest.mark.parametrize("chat", [GROUP, FORUM])
async def test_a_reply_to_the_head_of_a_reply_chain_names_it(fake: FakeTelegram, sink: Sink, chat: int) -> None:
    # In a supergroup Telegram puts a reply in the thread its reply chain makes, headed by the first message of the
    # chain: a reply to a message replying to nothing carries that message's id as ``message_thread_id``, with no
    # ``is_topic_message`` (westacks/telebot#135), as the fake gives it. Bot API servers before 9.3 did so in a
    # forum's General topic too (tdlib/telegram-bot-api#447), whose messages carry no thread id since: set by hand.
    if chat == FORUM:
        written(fake, chat, "in a topic: the chat is a forum", thread_id=77)  # not for the bot
    other = written(fake, chat, "the staging box is down")
    reply = fake.message_update(chat, f"@{BOT} look at this", **BOB, reply_to=other)
    if chat == FORUM:
        reply["message"]["message_thread_id"] = other
    assert reply["message"]["message_thread_id"] == other
    fake.push_update(reply)
    await fake.wait_for(lambda: sink.inbound)
    assert [(i.text, i.reply_to) for i in sink.inbound] == [(f"@{BOT} look at this", str(other))]
