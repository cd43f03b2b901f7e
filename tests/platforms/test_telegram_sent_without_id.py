"""A send Telegram answered done (``{"ok": true, …}`` at a 2xx) whose answer names no ``message_id``: a
result of another shape (a broken proxy in between, a self-hosted server), no result at all, a body cut
short after its ``{"ok": true``. It was taken for a failed send (a `NetworkError`, or an `AttributeError` for
a null result), and the outbox sent the part again: the chat showed it twice, though Telegram had said it
was sent. It is a send that happened: its `Sent` id is one no edit can use (`NO_ID`), so an edit or a
deletion of it is `EditUnsupported` and the gateway sends a progress card's next state anew. The real
aiogram client against the loopback fake."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import EditUnsupported, Outbound, OutboundFile
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import NO_ID, TelegramAdapter
from tests.platforms.telegram_client import fake_telegram, running_telegram

CHAT = "7"
WAIT = 10.0


fake = fake_telegram()
adapter = running_telegram()


RESHAPES = pytest.mark.parametrize("reshape", [
    lambda result: {k: v for k, v in result.items() if k != "message_id"},
    lambda result: {},
    lambda result: None,
    lambda result: True,
    lambda result: {**result, "message_id": "a number it is not"},
], ids=["no-message-id", "empty-object", "null", "true", "id-of-another-kind"])


@RESHAPES
async def test_a_send_answered_done_without_a_message_id_is_sent_once(
        fake: FakeTelegram, adapter: TelegramAdapter, reshape: Any, caplog: pytest.LogCaptureFixture) -> None:
    fake.reshape_next("sendMessage", reshape)
    with caplog.at_level(logging.WARNING, "platforms.telegram"):
        sent = await adapter.send(Outbound(CHAT, None, "hello"))
    assert sent.message_id.startswith(NO_ID)
    assert [m["text"] for m in fake.messages[CHAT]] == ["hello"]
    assert len(fake.calls_to("sendMessage")) == 1
    if reshape(fake.messages[CHAT][0]) is not None:  # a null result is read without complaint by aiogram
        assert any("names no message id" in r.getMessage() for r in caplog.records)


async def test_a_send_whose_answer_is_cut_short_after_ok_true_is_taken_as_sent(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    # Telegram begins an answer with "ok": true only for a call it made.
    fake.fail_next("sendMessage", 200, body='{"ok":true,"result":{"message_id":4,"da', content_type="application/json")
    sent = await adapter.send(Outbound(CHAT, None, "hello"))
    assert sent.message_id.startswith(NO_ID)
    assert len(fake.calls_to("sendMessage")) == 1


async def test_ids_of_messages_sent_without_one_are_each_their_own(fake: FakeTelegram,
                                                                  adapter: TelegramAdapter) -> None:
    fake.reshape_next("sendMessage", lambda result: {})
    fake.reshape_next("sendMessage", lambda result: {})
    first = await adapter.send(Outbound(CHAT, None, "one"))
    second = await adapter.send(Outbound(CHAT, None, "two"))
    assert first.message_id != second.message_id


async def test_such_a_message_cannot_be_edited_nor_deleted_and_nothing_else_is_touched(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    await adapter.send(Outbound(CHAT, None, "an earlier message"))
    fake.reshape_next("sendMessage", lambda result: {})
    sent = await adapter.send(Outbound(CHAT, None, "⏳ working"))
    with pytest.raises(EditUnsupported):
        await adapter.edit(CHAT, None, sent.message_id, "done")
    with pytest.raises(EditUnsupported):
        await adapter.delete(CHAT, None, sent.message_id)
    assert [m["text"] for m in fake.messages[CHAT]] == ["an earlier message", "⏳ working"]
    assert not fake.calls_to("editMessageText") and not fake.calls_to("deleteMessage")


async def test_a_file_sent_whose_answer_names_no_message_id_is_sent_once(
        fake: FakeTelegram, adapter: TelegramAdapter, tmp_path: Path) -> None:
    path = tmp_path / "report.bin"
    path.write_bytes(b"\x00" * 100)
    fake.reshape_next("sendDocument", lambda result: {"ok": "sure"})
    sent = await adapter.send_file(Outbound(CHAT, None, "the report"), OutboundFile(str(path), "report.bin", 100))
    assert sent.message_id.startswith(NO_ID)
    assert len(fake.calls_to("sendDocument")) == 1 and len(fake.messages[CHAT]) == 1


async def test_the_outbox_sends_such_a_card_once_and_its_next_state_anew(
        fake: FakeTelegram, adapter: TelegramAdapter, tmp_path: Path) -> None:
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"telegram": adapter})
    await outbox.start()
    try:
        fake.reshape_next("sendMessage", lambda result: {})
        outbox.enqueue("telegram", CHAT, None, "⏳ working", kind="notice", key="card")
        first = await outbox.wait_sent("card:0", timeout=WAIT)
        outbox.enqueue_edit("telegram", CHAT, None, "card:0", "done", key="card-done")
        second = await outbox.wait_sent("card-done:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
    assert first is not None and first.startswith(NO_ID)
    assert second is not None and not second.startswith(NO_ID)
    # Sent once (not again at every retry), its next state a new message: the edit could not find it.
    assert [m["text"] for m in fake.messages[CHAT]] == ["⏳ working", "done"]
    assert not fake.calls_to("editMessageText")
