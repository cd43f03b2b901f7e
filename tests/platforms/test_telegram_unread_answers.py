"""A send Telegram made, answered ``{"ok": true, "result": …}`` with a message aiogram cannot read (a newer
Bot API's, a self-hosted server's that keeps to it loosely: a field it requires left out or of another kind).
aiogram raises `ClientDecodeError`, which was taken for a `NetworkError`: the outbox sent the part again, with
growing backoff, for up to an hour, and the chat showed it once more at every try. The call was made: the
send is taken as done, its message id read from the answer as it came. The real aiogram client against the
loopback fake."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from platforms.base import NetworkError, Outbound, OutboundFile
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import NO_ID, TelegramAdapter
from tests.platforms.telegram_client import fake_telegram, running_telegram

CHAT = "7"


def without(*fields: str) -> Any:
    return lambda result: {k: v for k, v in result.items() if k not in fields}


fake = fake_telegram()
adapter = running_telegram()


@pytest.mark.parametrize("reshape", [
    without("date"),
    without("chat"),
    lambda result: {**result, "date": "yesterday"},
    lambda result: {**result, "chat": {"id": result["chat"]["id"]}},
], ids=["no-date", "no-chat", "date-of-another-kind", "chat-without-type"])
async def test_a_message_sent_whose_answer_aiogram_cannot_read_is_sent_once_with_its_id(
        fake: FakeTelegram, adapter: TelegramAdapter, reshape: Any, caplog: pytest.LogCaptureFixture) -> None:
    fake.reshape_next("sendMessage", reshape)
    with caplog.at_level(logging.WARNING, "platforms.telegram"):
        sent = await adapter.send(Outbound(CHAT, None, "hello"))
    [message] = fake.messages[CHAT]
    assert sent.message_id == str(message["message_id"])
    assert [r.getMessage() for r in caplog.records if "cannot read" in r.getMessage()]
    # Its id is the message's: the card it was can still be edited.
    await adapter.edit(CHAT, None, sent.message_id, "hello again")
    assert message["text"] == "hello again"


async def test_a_file_sent_whose_answer_aiogram_cannot_read_is_sent_once(
        fake: FakeTelegram, adapter: TelegramAdapter, tmp_path: Path) -> None:
    path = tmp_path / "report.bin"
    path.write_bytes(b"\x00" * 100)
    fake.reshape_next("sendDocument", without("date"))
    sent = await adapter.send_file(Outbound(CHAT, None, "the report"), OutboundFile(str(path), "report.bin", 100))
    [message] = fake.messages[CHAT]
    assert sent.message_id == str(message["message_id"])


async def test_an_answer_naming_no_message_id_is_sent_once_under_no_id_of_another(fake: FakeTelegram,
                                                                                  adapter: TelegramAdapter) -> None:
    # Telegram said it was done: sent again, it would show twice. Its id is none a message has
    # (test_telegram_sent_without_id has the rest).
    fake.reshape_next("sendMessage", without("message_id"))
    sent = await adapter.send(Outbound(CHAT, None, "hello"))
    assert sent.message_id.startswith(NO_ID)
    assert len(fake.messages[CHAT]) == 1


async def test_an_unreadable_answer_to_an_error_status_is_no_send(fake: FakeTelegram,
                                                                  adapter: TelegramAdapter) -> None:
    # "ok": true at a 5xx is no word that the call was made.
    fake.fail_next("sendMessage", 502, body='{"ok": true, "result": {"message_id": 5}}',
                   content_type="application/json")
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(CHAT, None, "hello"))
    assert not fake.messages[CHAT]
