"""The update kinds the gateway does not serve, end to end: the real aiogram client in `TelegramAdapter` against
the loopback `FakeTelegram`, with the real `Gateway`. It asks Telegram for ``message``, ``edited_message`` and
``my_chat_member`` updates only (the last: the bot removed or blocked, `tests/gateway/test_stop_when_chat_lost.py`),
so a channel's posts (also one mentioning the bot), business messages, reactions, button presses, inline queries
and join requests never come. One Telegram still serves (those queued before a changed ``allowed_updates`` took
effect) is confirmed, unanswered, with no warning, and the messages after it are answered as usual
(docs/platforms/telegram.md)."""

from __future__ import annotations

import json
import logging
import time

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

USER = {"id": 42, "is_bot": False, "first_name": "Alice", "username": "alice"}
CHANNEL = {"id": -1009, "type": "channel", "title": "News"}
GROUP = {"id": -1005, "type": "supergroup", "title": "Team"}


def others() -> list[dict]:
    now = int(time.time())
    post = {"message_id": 5, "date": now, "chat": CHANNEL, "sender_chat": CHANNEL, "text": "@switchboard_bot hi",
            "entities": [{"type": "mention", "offset": 0, "length": 16}]}
    return [
        {"channel_post": post},
        {"edited_channel_post": {**post, "edit_date": now}},
        {"business_connection": {"id": "bc", "user": USER, "user_chat_id": 42, "date": now, "is_enabled": True}},
        {"business_message": {"message_id": 6, "date": now, "chat": {"id": 77, "type": "private", "first_name": "B"},
                              "from": {"id": 77, "is_bot": False, "first_name": "B"}, "text": "hello",
                              "business_connection_id": "bc"}},
        {"message_reaction": {"chat": GROUP, "message_id": 3, "user": USER, "date": now, "old_reaction": [],
                              "new_reaction": [{"type": "emoji", "emoji": "👍"}]}},
        {"callback_query": {"id": "1", "from": USER, "chat_instance": "x", "data": "yes"}},
        {"inline_query": {"id": "2", "from": USER, "query": "weather", "offset": ""}},
        {"chat_join_request": {"chat": GROUP, "from": USER, "user_chat_id": 42, "date": now}},
    ]


async def test_update_kinds_not_asked_for_are_confirmed_unanswered_and_quietly(telegram_gateways, caplog):
    caplog.set_level(logging.WARNING)
    async with FakeTelegram() as fake:
        gateway = await telegram_gateways(fake, ScriptedModel({"parent": [[{"text": "hello back"}]]}), progress="off")
        asked = ["edited_message", "message", "my_chat_member"]
        assert json.loads(fake.calls_to("getUpdates")[0]["allowed_updates"]) == asked
        for update in others():
            fake.push_update(update)
        fake.push_message(42, "hi")
        await fake.wait_for(lambda: fake.messages["42"])
        await settled(gateway)
        await fake.wait_for(lambda: not fake.pending)  # every one confirmed, none left for a later start
        assert [m["text"] for m in fake.messages["42"]] == ["hello back"]
        assert {method for method, _ in fake.calls} == {"getMe", "setMyCommands", "getWebhookInfo", "deleteWebhook",
                                                         "getUpdates", "sendChatAction", "sendMessage"}
        assert [c["chat_id"] for c in fake.calls_to("sendMessage")] == ["42"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
