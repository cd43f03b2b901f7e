"""Updates aiogram cannot read (a field Telegram documents as required, left out) still arrive, and
never stop the bot hearing the others: the real aiogram against FakeTelegram, polling and webhook."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def forwarded_from_a_hidden_user(fake: FakeTelegram, text: str) -> dict[str, Any]:
    """A message forwarded from someone who hides their account, forwarded before Telegram named
    such senders: its origin has no ``sender_user_name``, which the Bot API documents as always
    there and aiogram requires (aiogram#1840)."""
    update = fake.message_update(42, text)
    update["message"]["forward_origin"] = {"type": "hidden_user", "date": 1422450181}
    return update


def with_an_empty_story(fake: FakeTelegram, text: str) -> dict[str, Any]:
    """A reply to a story Telegram sends as ``{}`` (aiogram#1587)."""
    update = fake.message_update(42, text)
    update["message"]["external_reply"] = {"origin": {"type": "hidden_user", "date": 1, "sender_user_name": "x"},
                                           "story": {}}
    return update


async def test_an_update_aiogram_cannot_read_does_not_stop_polling(fake: FakeTelegram) -> None:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink)
    try:
        fake.push_update(forwarded_from_a_hidden_user(fake, "what does this say?"))
        fake.push_update(with_an_empty_story(fake, "and this?"))
        fake.push_message(42, "hello")
        fake.push_update({"message": {"message_id": 9, "date": 1, "text": "in no chat"}})  # nothing to read
        await fake.wait_for(lambda: len(sink.inbound) == 3)
        assert [i.text for i in sink.inbound] == ["what does this say?", "and this?", "hello"]
        await fake.wait_for(lambda: not fake.pending)  # all confirmed: none served again and again
        assert adapter.connection().status == "connected"
        fake.push_message(42, "still there?")
        await fake.wait_for(lambda: len(sink.inbound) == 4)
    finally:
        await adapter.stop()


async def test_a_webhook_update_aiogram_cannot_read_is_still_heard(fake: FakeTelegram) -> None:
    async with webhook_adapter(fake) as (_, sink):
        # Telegram delivers a webhook update again and again while it is refused (400).
        assert await fake.deliver_webhook(forwarded_from_a_hidden_user(fake, "what does this say?")) == 200
        assert await fake.deliver_webhook({"update_id": 7, "message": {"message_id": 9, "text": "in no chat"}}) == 200
        assert [i.text for i in sink.inbound] == ["what does this say?"]


async def test_a_reply_quoting_a_message_aiogram_cannot_read_is_sent_once(fake: FakeTelegram) -> None:
    # Telegram answers a send with the message it made, the message it quotes included: one forwarded
    # from a hidden account comes back without the origin's sender_user_name (aiogram#1840). aiogram
    # could not read the answer, the adapter raised a NetworkError, and the outbox sent the reply again,
    # and again at every retry: the group got the same answer once more each time.
    update = fake.message_update(-100, "@switchboard_bot what does this say?", chat_type="supergroup")
    update["message"]["forward_origin"] = {"type": "hidden_user", "date": 1422450181}
    fake.push_update(update)  # served to the bot, as the message the gateway answers
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    try:
        sent = await adapter.send(Outbound(chat_id="-100", thread_id=None, text="it says **hi**",
                                           reply_to=str(update["message"]["message_id"])))
    finally:
        await adapter.stop()
    [reply] = fake.messages["-100"]
    assert sent.message_id == str(reply["message_id"]) and reply["reply_to"] == update["message"]["message_id"]
