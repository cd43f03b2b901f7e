"""FakeTelegram's threads, as the Bot API server places messages: ``message_thread_id`` counts in a forum only, a
reply lands where the message it replies to is (a topic, a reply chain in a supergroup, a channel post's comment
thread), and a topic an admin closed or deleted refuses the bot's messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientSession

from platforms.fakes.telegram import FakeTelegram

FORUM, GROUP, CHANNEL, BASIC = -1001, -1002, -1003, -5


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram("42:TOKEN") as fake:
        yield fake


async def call(http: ClientSession, fake: FakeTelegram, method: str, **params: Any) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{fake.base_url}/bot{fake.token}/{method}", data={k: str(v) for k, v in params.items()}) as r:
        return r.status, await r.json()


def quoting(message_id: int) -> str:
    return json.dumps({"message_id": message_id, "allow_sending_without_reply": True})


async def test_a_reply_lands_in_the_comment_thread_and_message_thread_id_is_ignored_outside_a_forum(
        fake: FakeTelegram, http: ClientSession) -> None:
    post = fake.message_update(GROUP, "a post", chat_type="supergroup", sender_chat=CHANNEL, automatic_forward=True)
    fake.push_update(post)
    posted = post["message"]["message_id"]
    comment = fake.message_update(GROUP, "a comment", chat_type="supergroup", reply_to=posted)
    fake.push_update(comment)
    assert comment["message"]["message_thread_id"] == posted and "is_topic_message" not in comment["message"]
    _, plain = await call(http, fake, "sendMessage", chat_id=GROUP, text="in the chat", message_thread_id=posted)
    _, reply = await call(http, fake, "sendMessage", chat_id=GROUP, text="a reply",
                          reply_parameters=quoting(comment["message"]["message_id"]))
    assert "message_thread_id" not in plain["result"]  # no forum: Telegram ignores it
    assert reply["result"]["message_thread_id"] == posted and "is_topic_message" not in reply["result"]
    assert [m["thread_id"] for m in fake.messages[str(GROUP)]] == [None, posted]


async def test_in_a_supergroup_a_reply_carries_the_id_of_its_reply_chains_first_message(
        fake: FakeTelegram, http: ClientSession) -> None:
    # As the Bot API server shows a reply there (TDLib's MessageReplyHeader: the server's reply_to_top_id, else the
    # message replied to), a user's or the bot's: a thread, not a topic, so no ``is_topic_message``.
    def written(text: str, **kw: Any) -> dict[str, Any]:
        update = fake.message_update(GROUP, text, chat_type="supergroup", **kw)
        fake.push_update(update)
        return update["message"]

    head = written("the staging box is down")
    assert "message_thread_id" not in head
    reply = written("since when?", reply_to=head["message_id"])
    again = written("an hour ago", reply_to=reply["message_id"])
    _, bots = await call(http, fake, "sendMessage", chat_id=GROUP, text="looking",
                         reply_parameters=quoting(again["message_id"]))
    _, to_head = await call(http, fake, "sendMessage", chat_id=GROUP, text="on it",
                            reply_to_message_id=head["message_id"])
    to_bot = written("thanks", reply_to_bot=True)
    chain = [reply, again, bots["result"], to_head["result"], to_bot]
    assert [m["message_thread_id"] for m in chain] == [head["message_id"]] * 5
    assert not any("is_topic_message" in m for m in chain)
    assert [m["thread_id"] for m in fake.messages[str(GROUP)]] == [head["message_id"]] * 2


@pytest.mark.parametrize("chat", [FORUM, BASIC, 42])
async def test_a_reply_in_a_forums_general_topic_a_basic_group_or_a_private_chat_is_in_no_thread(
        fake: FakeTelegram, http: ClientSession, chat: int) -> None:
    # A forum's General topic has no thread id since Bot API 9.3 (its MessageTopic is the General forum topic).
    kind = {FORUM: "supergroup", BASIC: "group", 42: "private"}[chat]
    if chat == FORUM:
        fake.push_update(fake.message_update(chat, "in a topic", chat_type=kind, thread_id=77))
    head = fake.message_update(chat, "the staging box is down", chat_type=kind)
    fake.push_update(head)
    reply = fake.message_update(chat, "since when?", chat_type=kind, reply_to=head["message"]["message_id"])
    _, bots = await call(http, fake, "sendMessage", chat_id=chat, text="looking",
                         reply_parameters=quoting(head["message"]["message_id"]))
    assert "message_thread_id" not in reply["message"] and "message_thread_id" not in bots["result"]


async def test_a_topic_closed_or_deleted_refuses_the_bots_messages(fake: FakeTelegram, http: ClientSession) -> None:
    asked = fake.message_update(FORUM, "in 77", chat_type="supergroup", thread_id=77)
    fake.push_update(asked)
    status, reply = await call(http, fake, "sendMessage", chat_id=FORUM, text="implicit",
                               reply_parameters=quoting(asked["message"]["message_id"]))
    assert status == 200 and reply["result"]["message_thread_id"] == 77 and reply["result"]["is_topic_message"]
    fake.close_topic(FORUM, 77)
    status, body = await call(http, fake, "sendMessage", chat_id=FORUM, text="closed", message_thread_id=77)
    assert (status, body["description"]) == (400, "Bad Request: TOPIC_CLOSED")
    assert (await call(http, fake, "sendChatAction", chat_id=FORUM, action="typing", message_thread_id=77))[0] == 200
    fake.reopen_topic(FORUM, 77)
    assert (await call(http, fake, "sendMessage", chat_id=FORUM, text="open again", message_thread_id=77))[0] == 200
    fake.delete_topic(FORUM, 77)
    assert fake.messages[str(FORUM)] == []  # gone with the topic
    for method, params in (("sendMessage", {"text": "deleted"}), ("sendChatAction", {"action": "typing"})):
        status, body = await call(http, fake, method, chat_id=FORUM, message_thread_id=77, **params)
        assert (status, body["description"]) == (400, "Bad Request: message thread not found")
