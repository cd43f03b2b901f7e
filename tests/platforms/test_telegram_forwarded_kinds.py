"""Telegram messages a user forwards to the bot that hold neither text nor a file the bot can fetch — a channel's
paid media, a giveaway and its winners — reach the model as text (`platforms.telegram_inbound.content_as_text`),
never as silence in a DM. The real aiogram client against `FakeTelegram` over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

CHANNEL = {"id": -1001, "type": "channel", "title": "Daily News", "username": "dailynews"}
FROM_CHANNEL = {"forward_origin": {"type": "channel", "chat": CHANNEL, "message_id": 40, "date": 1_767_225_600}}
DRAWN = 1_767_225_600  # 2026-01-01 00:00 UTC


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


async def test_forwarded_paid_media_giveaways_and_checklists_reach_the_model_as_text(fake: FakeTelegram,
                                                                                     sink: Sink) -> None:
    preview = {"type": "preview", "width": 1280, "height": 720}
    photo = {"type": "photo", "photo": [{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90}]}
    winners = [{"id": 11, "is_bot": False, "first_name": "Ada", "last_name": "Lovelace"},
               {"id": 12, "is_bot": False, "first_name": "Alan", "username": "alan"}]
    tasks = [{"id": 1, "text": "Milk"}, {"id": 2, "text": "Bread"}]
    for content in (
        {"paid_media": {"star_count": 25, "paid_media": [preview, photo]}, **FROM_CHANNEL},
        {"paid_media": {"star_count": 1, "paid_media": [preview]}},
        {"giveaway": {"chats": [CHANNEL], "winners_selection_date": DRAWN, "winner_count": 3,
                      "prize_description": "a mug"}, **FROM_CHANNEL},
        {"giveaway": {"chats": [CHANNEL, {"id": -1002, "type": "channel", "title": "Weekly"}],
                      "winners_selection_date": DRAWN, "winner_count": 1, "premium_subscription_month_count": 6}},
        {"giveaway_winners": {"chat": CHANNEL, "giveaway_message_id": 40, "winners_selection_date": DRAWN,
                              "winner_count": 2, "winners": winners, "prize_star_count": 500}, **FROM_CHANNEL},
        {"checklist": {"title": "Shopping", "tasks": tasks}},
    ):
        push(fake, 7, content)
    fake.push_message(7, "the last one")  # handed over after the others: none of them is still on its way
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "the last one")
    assert [i.text for i in sink.inbound] == [
        "(paid media for 25 Stars: 2 items, which the bot cannot see)",
        "(paid media for 1 Star: 1 item, which the bot cannot see)",
        "🎁 Giveaway: 3 winners drawn on 2026-01-01 00:00 UTC among the members of Daily News; prize: a mug",
        "🎁 Giveaway: 1 winner drawn on 2026-01-01 00:00 UTC among the members of Daily News, Weekly;"
        " prize: 6 months of Telegram Premium",
        "🏆 Giveaway winners in Daily News: Ada Lovelace, Alan (@alan); prize: 500 Stars",
        "☑️ Checklist: Shopping\n- Milk\n- Bread",
        "the last one",
    ]
    assert [i.forwarded for i in sink.inbound[:6]] == [True, False, True, False, True, False]
    assert not any(i.is_command for i in sink.inbound)
