"""Telegram messages with neither text nor a file (`platforms.telegram_inbound.content_as_text`): a location,
a contact, a poll, a sticker... reach the model as text it can use, never as silence or an empty turn. The
real aiogram client against `FakeTelegram` over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

BOT = "switchboard_bot"
GROUP = dict(chat_type="supergroup", user_id=5, username="bob")
LOCATION = {"latitude": 52.520008, "longitude": 13.404954}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def sink(fake: FakeTelegram) -> AsyncIterator[Sink]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [CommandSpec("new", "Start a new session")])
    yield sink
    await adapter.stop()


def push(fake: FakeTelegram, chat_id: int, content: dict[str, Any], **kw: Any) -> None:
    """A message holding ``content`` in place of text, as Telegram sends one (no ``text``, no entities)."""
    update = fake.message_update(chat_id, "", entities=[], **kw)
    del update["message"]["text"]
    update["message"].update(content)
    fake.push_update(update)


async def written_last(fake: FakeTelegram, sink: Sink, chat_id: int, count: int, **kw: Any) -> list[str]:
    """The texts handed over, once a text message written after the others is."""
    fake.push_message(chat_id, "the last one", **kw)
    await fake.wait_for(lambda: len(sink.inbound) == count)
    assert sink.inbound[-1].text == "the last one"
    return [i.text for i in sink.inbound[:-1]]


async def test_what_a_user_sends_without_text_reaches_the_model_as_text(fake: FakeTelegram, sink: Sink) -> None:
    sticker = {"file_id": "s1", "file_unique_id": "u1", "type": "regular", "width": 512, "height": 512,
               "is_animated": True, "is_video": False, "emoji": "😂", "set_name": "Animals"}
    options = [{"persistent_id": str(n), "text": text, "voter_count": 0} for n, text in enumerate(("Tea", "Coffee"))]
    poll = {"id": "p1", "question": "Which one?", "options": options, "total_voter_count": 0, "is_closed": False,
            "is_anonymous": True, "type": "regular", "allows_multiple_answers": False, "allows_revoting": True,
            "members_only": False}
    for content in (
        {"location": LOCATION},
        {"location": {**LOCATION, "live_period": 900}},
        {"venue": {"location": LOCATION, "title": "Brandenburger Tor", "address": "Pariser Platz"},
         "location": LOCATION},
        {"contact": {"phone_number": "+49 30 1234", "first_name": "Ada", "last_name": "Lovelace"}},
        {"poll": poll},
        {"sticker": sticker},
        {"sticker": {**sticker, "is_animated": False, "is_video": True, "emoji": None}},
        {"dice": {"emoji": "🎲", "value": 4}},
        {"story": {"chat": {"id": 99, "type": "channel", "title": "News"}, "id": 3}},
        {"write_access_allowed": {}},  # a service message: nothing to answer
    ):
        push(fake, 7, content)
    assert await written_last(fake, sink, 7, 10) == [
        "📍 52.520008, 13.404954",
        "📍 52.520008, 13.404954 (live location)",
        "📍 52.520008, 13.404954 (Brandenburger Tor, Pariser Platz)",
        "👤 Ada Lovelace, +49 30 1234",
        "📊 Poll: Which one?\n- Tea\n- Coffee",
        "😂 (a sticker)",
        "(a sticker)",
        "🎲 (a dice roll: 4)",
        "(a story, which the bot cannot see)",
    ]
    assert not any(i.is_command for i in sink.inbound)


async def test_in_a_group_only_a_reply_to_the_bot_addresses_it_with_a_location(fake: FakeTelegram,
                                                                               sink: Sink) -> None:
    fake.push_message(-100, f"@{BOT} hi", **GROUP)
    await fake.wait_for(lambda: sink.inbound)
    push(fake, -100, {"location": LOCATION}, **GROUP)  # shared with the group, not the bot
    push(fake, -100, {"venue": {"location": LOCATION, "title": f"@{BOT} bar", "address": "Pariser Platz"},
                      "location": LOCATION}, **GROUP)  # a venue's name is no mention
    push(fake, -100, {"location": LOCATION}, reply_to_bot=True, **GROUP)
    assert await written_last(fake, sink, -100, 3, reply_to_bot=True, **GROUP) == [
        f"@{BOT} hi", "📍 52.520008, 13.404954"]
