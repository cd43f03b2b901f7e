"""Real aiogram against `FakeTelegram`, for tests: the fake as a fixture, an adapter polling it as another, and
`edit_of`, Telegram's update for a user's edit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink


def fake_telegram() -> Any:
    """A ``fake`` fixture for a test module (``fake = fake_telegram()``): a `FakeTelegram` started for the test."""

    @pytest.fixture
    async def fake() -> AsyncIterator[FakeTelegram]:
        async with FakeTelegram() as fake:
            yield fake

    return fake


def running_telegram() -> Any:
    """An ``adapter`` fixture for a test module (``adapter = running_telegram()``): a `TelegramAdapter` on the
    module's ``fake``, started with a `Sink`, stopped after the test."""

    @pytest.fixture
    async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        yield adapter
        await adapter.stop()

    return adapter


def edit_of(update: dict[str, Any], text: str, after: int = 1) -> dict[str, Any]:
    """Telegram's ``edited_message`` for the message of ``update``, ``after`` updates (and seconds) after it."""
    message = {**update["message"], "text": text, "edit_date": update["message"]["date"] + after}
    message.pop("entities", None)
    return {"update_id": update["update_id"] + after, "edited_message": message}
