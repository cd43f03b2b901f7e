"""What Telegram's webhook is answered when handling an update fails (`platforms.telegram_webhook`).

Telegram delivers an update again for as long as it is answered anything but 2xx, and holds the
bot's later updates behind it: only a failure a later try can end may be answered so.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from aiogram import Bot, Dispatcher
from aiogram.types import Message
from aiohttp import web

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram_webhook import SECRET_HEADER, NotTaken, WebhookEndpoint
from tests.sqlite_errors import full_disk

SECRET = "s3cret"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # builds the updates only: nothing here calls the Bot API
        yield fake


@contextlib.asynccontextmanager
async def _serve(handler: Callable[[Message], object]) -> AsyncIterator[str]:
    bot = Bot("123456:TEST-token")
    dp = Dispatcher(disable_fsm=True)
    dp.message.register(handler)
    endpoint = WebhookEndpoint(SECRET, bot, dp, lambda: True)
    app = web.Application()
    app.add_routes([web.post("/telegram", endpoint.handle)])
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/telegram"
    finally:
        await runner.cleanup()
        await bot.session.close()


async def _post(url: str, update: dict) -> int:
    async with aiohttp.ClientSession() as client:
        async with client.post(url, json=update, headers={SECRET_HEADER: SECRET}) as response:
            await response.read()
            return response.status


async def test_an_update_the_adapter_fails_on_is_logged_and_answered_200_not_redelivered_forever(
        fake: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    # Answered 500, a bug one odd update trips came back at every one of Telegram's retries, and
    # held every later update of the bot behind it: the bot heard nobody.
    handled: list[str] = []

    async def handler(message: Message) -> None:
        if message.text == "odd":
            raise KeyError("a bug this update trips")
        handled.append(message.text or "")

    poison = fake.message_update(42, "odd")
    with caplog.at_level(logging.WARNING, logger="platforms.telegram"):
        async with _serve(handler) as url:
            assert await _post(url, poison) == 200
            assert await _post(url, fake.message_update(42, "next")) == 200
    assert handled == ["next"]
    (error,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert f"update {poison['update_id']} failed and is dropped" in error.getMessage()
    assert error.exc_info is not None and isinstance(error.exc_info[1], KeyError)


@pytest.mark.parametrize(("failure", "status"), [(full_disk, 500), (lambda: NotTaken("stopped"), 503)])
async def test_an_update_not_recorded_for_a_passing_reason_is_delivered_again(
        fake: FakeTelegram, caplog: pytest.LogCaptureFixture, failure: Callable[[], Exception], status: int) -> None:
    tries: list[int] = []

    async def handler(message: Message) -> None:
        tries.append(message.message_id)
        if len(tries) == 1:
            raise failure()

    update = fake.message_update(42, "keep me")
    with caplog.at_level(logging.WARNING, logger="platforms.telegram"):
        async with _serve(handler) as url:
            assert await _post(url, update) == status  # Telegram delivers it again ...
            assert await _post(url, update) == 200  # ... and then it is taken
    assert len(tries) == 2
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
