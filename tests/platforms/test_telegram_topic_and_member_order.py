"""What the bot's place in a forum topic or a chat is, as `TelegramAdapter` (real aiogram, the loopback `FakeTelegram`)
tells the gateway (`platforms.base.LosesChats`): a write refused as its topic deleted loses that topic alone, once; a
topic closed loses nothing (it may be reopened). A ``my_chat_member`` update older than one of the same chat already
handled (a webhook's, delivered again after its first delivery failed, or over another connection) says nothing of now:
the bot removed then added back, the late removal stopped the work begun since."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import DeliveryError, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink

FORUM = -1003


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def in_topic(topic: int | None, text: str = "an answer") -> Outbound:
    return Outbound(chat_id=str(FORUM), thread_id=None if topic is None else str(topic), text=text)


async def test_a_deleted_topic_is_lost_alone_and_once_a_closed_one_not_at_all(fake):
    async with losing(TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)) as (adapter, lost, _):
        fake.push_message(FORUM, "hi", chat_type="supergroup", thread_id=88)  # makes the chat a forum
        fake.close_topic(FORUM, 88)
        fake.delete_topic(FORUM, 77)
        for _ in range(2):
            with pytest.raises(DeliveryError):
                await adapter.send(in_topic(88))
            with pytest.raises(DeliveryError):
                await adapter.send(in_topic(77))
            await adapter.typing(str(FORUM), "77")
        fake.fail_next("sendMessage", 400, description="Bad Request: TOPIC_DELETED")  # the server's own word
        with pytest.raises(DeliveryError):
            await adapter.send(in_topic(66))
        await fake.wait_for(lambda: len(lost.told) == 2)
        assert (await adapter.send(in_topic(None))).message_id  # General goes on
        assert lost.told == [(str(FORUM), "the forum topic was deleted", "77"),
                             (str(FORUM), "the forum topic was deleted", "66")]


async def test_a_removal_delivered_after_the_bots_return_stops_nothing(fake):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook",
                              webhook_url=f"http://127.0.0.1:{sock.getsockname()[1]}/telegram")
    lost = Lost()
    adapter.bind_chat_lost(lost)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await adapter.start(Sink())
        fake._chat(FORUM, "supergroup")
        fake.remove_bot(FORUM)
        removed = fake.pending.pop()
        fake.add_bot(FORUM)
        added = fake.pending.pop()
        assert await fake.deliver_webhook(added) == 200
        assert await fake.deliver_webhook(removed) == 200  # its first delivery failed: Telegram sends it again
        assert lost.told == []
        fake.remove_bot(FORUM)  # removed anew: told
        assert await fake.deliver_webhook(fake.pending.pop()) == 200
        assert lost.told == [(str(FORUM), "the bot was removed from the chat")]
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_a_removal_after_a_week_without_updates_is_told_though_its_id_is_lower(fake):
    """Telegram numbers a bot's updates in a row, but after a week with none the next update's id is drawn at random
    (the Bot API's ``Update.update_id``): it may be lower than the last one heard, and the change it tells is still
    the latest one. The bot removed then was passed over as a late delivery: its chat's work went on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook",
                              webhook_url=f"http://127.0.0.1:{sock.getsockname()[1]}/telegram")
    lost = Lost()
    adapter.bind_chat_lost(lost)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await adapter.start(Sink())
        fake._chat(FORUM, "supergroup")
        fake.add_bot(FORUM)
        added = fake.pending.pop()
        added["my_chat_member"]["date"] -= 8 * 24 * 3600  # then nothing for eight days
        assert await fake.deliver_webhook(added) == 200
        fake.remove_bot(FORUM)
        removed = {**fake.pending.pop(), "update_id": 37}  # drawn at random: lower than the last one
        assert await fake.deliver_webhook(removed) == 200
        assert lost.told == [(str(FORUM), "the bot was removed from the chat")]
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_a_topics_loss_the_store_refused_is_told_again_and_a_gone_quote_or_other_refusal_loses_nothing(fake):
    async with losing(TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)) as (adapter, lost, _):
        fake.push_message(FORUM, "hi", chat_type="supergroup", thread_id=88)  # makes the chat a forum
        fake.fail_next("sendMessage", 400, description="Bad Request: message to be replied not found")
        fake.fail_next("sendMessage", 400, description="Bad Request: TOPIC_CLOSED")
        fake.fail_next("sendMessage", 400, description="Bad Request: message thread not found")  # no topic named
        for message in (dataclasses.replace(in_topic(88), reply_to="5"), in_topic(88), in_topic(None)):
            with pytest.raises(DeliveryError):
                await adapter.send(message)
        lost.refuse = 1  # a full disk, once
        fake.delete_topic(FORUM, 77)
        with pytest.raises(DeliveryError):
            await adapter.send(in_topic(77))
        await fake.wait_for(lambda: lost.told, timeout=5)
        await adapter.typing(str(FORUM), "77")
        assert lost.told == [(str(FORUM), "the forum topic was deleted", "77")]
