"""Telegram messages that reached the model as nothing, or as less than was sent: an invoice and a rich message
(read as text), paid media with a caption (the caption alone), a giveaway's countries; and, over a webhook, a
user's edit Telegram delivers before the message it edits (`platforms.telegram.EarlyEdits`). The real aiogram
client inside `TelegramAdapter` against `FakeTelegram` over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter

CHANNEL = {"id": -1001, "type": "channel", "title": "Daily News", "username": "dailynews"}
FROM_CHANNEL = {"forward_origin": {"type": "channel", "chat": CHANNEL, "message_id": 40, "date": 1_767_225_600}}
PHOTO = [{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90}]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username="switchboard_bot") as fake:
        yield fake


@pytest.fixture
async def sink(fake: FakeTelegram) -> AsyncIterator[Sink]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [CommandSpec("new", "Start a new session")])
    yield sink
    await adapter.stop()


def push(fake: FakeTelegram, chat_id: int, content: dict[str, Any]) -> None:
    """A message holding ``content`` in place of text, as Telegram sends one (no ``text``, no entities)."""
    update = fake.message_update(chat_id, "", entities=[])
    del update["message"]["text"]
    update["message"].update(content)
    fake.push_update(update)


async def handed_over(fake: FakeTelegram, sink: Sink, count: int) -> list[str]:
    """The texts handed over, once a text message written after the ``count`` others is."""
    fake.push_message(7, "the last one")
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "the last one")
    assert len(sink.inbound) == count + 1
    return [i.text for i in sink.inbound[:-1]]


async def test_an_invoice_and_a_rich_message_reach_the_model_as_text(fake: FakeTelegram, sink: Sink) -> None:
    invoice = {"title": "Coffee", "description": "A large flat white", "start_parameter": "c",
               "currency": "EUR", "total_amount": 450}
    rich = {"blocks": [
        {"type": "heading", "text": "Release plan", "size": 1},
        {"type": "paragraph", "text": ["Ship on ", {"type": "bold", "text": "Friday"}, " ",
                                       {"type": "custom_emoji", "custom_emoji_id": "9", "alternative_text": "🚀"}]},
        {"type": "divider"},
        {"type": "list", "items": [{"label": "1.", "blocks": [{"type": "paragraph", "text": "Tests"}]},
                                   {"label": "2.", "blocks": [{"type": "paragraph", "text": "Docs"}]}]},
        {"type": "table", "cells": [[{"align": "left", "valign": "top", "text": "Owner"},
                                     {"align": "left", "valign": "top", "text": "Ada"}]]},
        {"type": "photo", "photo": PHOTO, "caption": {"text": "The team"}},
        {"type": "blockquote", "blocks": [{"type": "paragraph", "text": "Ship it"}], "credit": "Alan"},
    ]}
    push(fake, 7, {"invoice": invoice, **FROM_CHANNEL})
    push(fake, 7, {"invoice": {**invoice, "currency": "XTR", "total_amount": 1}})
    push(fake, 7, {"rich_message": rich})
    push(fake, 7, {"successful_payment": {"currency": "XTR", "total_amount": 1, "invoice_payload": "p",
                                          "telegram_payment_charge_id": "t", "provider_payment_charge_id": ""}})
    assert await handed_over(fake, sink, 3) == [
        "🧾 Invoice: Coffee: A large flat white (450 EUR in its smallest unit)",
        "🧾 Invoice: Coffee: A large flat white (1 Star)",
        "Release plan\nShip on Friday 🚀\n1. Tests\n2. Docs\nOwner | Ada\n(a photo, which the bot cannot see)"
        "\nThe team\nShip it\nAlan",
    ]
    assert not any(i.is_command or i.attachments for i in sink.inbound)


async def test_a_live_photo_is_its_still_photo(fake: FakeTelegram, sink: Sink) -> None:
    live = {"file_id": "l1", "file_unique_id": "lu1", "width": 90, "height": 90, "duration": 3}
    push(fake, 7, {"live_photo": live, "photo": PHOTO, "caption": "look"})
    assert await handed_over(fake, sink, 1) == ["look"]
    assert [a.kind for a in sink.inbound[0].attachments] == ["image"]


async def test_paid_media_with_a_caption_says_what_the_caption_came_with(fake: FakeTelegram, sink: Sink) -> None:
    preview = {"type": "preview", "width": 1280, "height": 720}
    push(fake, 7, {"paid_media": {"star_count": 25, "paid_media": [preview, preview]}, "caption": "Sunset, uncut",
                   **FROM_CHANNEL})
    assert await handed_over(fake, sink, 1) == [
        "Sunset, uncut\n(paid media for 25 Stars: 2 items, which the bot cannot see)"]


async def test_a_giveaway_names_its_countries(fake: FakeTelegram, sink: Sink) -> None:
    push(fake, 7, {"giveaway": {"chats": [CHANNEL], "winners_selection_date": 1_767_225_600, "winner_count": 3,
                                "country_codes": ["DE", "FR"], "prize_description": "a mug"}, **FROM_CHANNEL})
    assert await handed_over(fake, sink, 1) == [
        "🎁 Giveaway: 3 winners drawn on 2026-01-01 00:00 UTC among the members of Daily News in DE, FR;"
        " prize: a mug"]


def edit_of(fake: FakeTelegram, update: dict[str, Any], text: str, after: int = 1) -> dict[str, Any]:
    """Telegram's ``edited_message`` for the message of ``update``, ``after`` updates later."""
    message = {**update["message"], "text": text, "edit_date": update["message"]["date"] + after}
    message.pop("entities", None)
    if text.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    return {"update_id": update["update_id"] + after, "edited_message": message}


async def test_a_webhook_edit_delivered_before_its_message_is_what_the_message_says(fake: FakeTelegram) -> None:
    heard: list[tuple[str, str]] = []

    async def edited(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        heard.append((message_id, text))
        return False  # as the gateway answers an edit of a message it has not been handed

    async with webhook_adapter(fake) as (adapter, sink):
        adapter.bind_edits(edited)
        prod, other, plain = (fake.message_update(42, text) for text in ("deploy to prod", "hi", "as written"))
        assert await fake.deliver_webhook(edit_of(fake, prod, "deploy to staging", after=5)) == 200
        assert await fake.deliver_webhook(edit_of(fake, prod, "deploy to dev", after=3)) == 200  # older: passed over
        assert await fake.deliver_webhook(edit_of(fake, other, "/new")) == 200  # into a command: not applied
        for update in (prod, other, plain):
            assert await fake.deliver_webhook(update) == 200
        assert await fake.deliver_webhook(prod) == 200  # delivered again: the edit was used up
    assert [m for m, _ in heard] == [str(prod["message"]["message_id"]), str(other["message"]["message_id"])]
    assert [i.text for i in sink.inbound] == ["deploy to staging", "hi", "as written", "deploy to prod"]
