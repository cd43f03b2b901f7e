"""Bodies Telegram's webhook cannot read as an update, posted with the right secret
(`platforms.telegram_webhook`): a clear 400, never a 500 Telegram would send again and again;
one cut short by its sender hanging up is no error in the log."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from aiogram import Bot, Dispatcher
from aiohttp import web

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram_webhook import SECRET_HEADER, WebhookEndpoint
from tests.platforms.cut_short import Handled, cut_short
from tests.platforms.telegram_webhook import webhook_adapter

SECRET = "s3cret"


@pytest.mark.parametrize("body, content_type", [
    (b'{"update_id": 1}', "application/json; charset=no-such-codec"),  # decoding it raises LookupError
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),  # json.loads raises RecursionError
    (b"{", "application/json"),
], ids=["unknown charset", "nested too deep", "not json"])
async def test_an_unreadable_body_is_400_and_nothing_is_handed_over(
    caplog: pytest.LogCaptureFixture, body: bytes, content_type: str
) -> None:
    async with FakeTelegram() as fake, webhook_adapter(fake, webhook_secret=SECRET) as (adapter, sink):
        headers = {SECRET_HEADER: SECRET, "Content-Type": content_type}
        async with aiohttp.ClientSession() as client, client.post(adapter.webhook_url, data=body,
                                                                  headers=headers) as response:
            assert (response.status, await response.text()) == (400, "malformed update")
        assert sink.inbound == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_body_cut_short_is_no_error_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    handled, handed = Handled(), []
    bot, dp = Bot("123456:TEST-token"), Dispatcher(disable_fsm=True)
    dp.message.register(handed.append)
    app = web.Application(middlewares=[handled.middleware])
    app.add_routes([web.post("/telegram", WebhookEndpoint(SECRET, bot, dp, lambda: True).handle)])
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        await cut_short(f"http://{host}:{port}/telegram", {SECRET_HEADER: SECRET, "Content-Type": "application/json"},
                        handled)
    finally:
        await runner.cleanup()
        await bot.session.close()
    assert handed == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
