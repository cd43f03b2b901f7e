"""Closing the Bot API session: aiogram waits 250 ms for TLS connections to wind down, which a
plain-HTTP Bot API (a local server, the offline fake) never opened; every gateway stop paid it."""

from __future__ import annotations

import asyncio

import pytest
from aiogram.client.telegram import TelegramAPIServer

from platforms.telegram_errors import BotApiSession


@pytest.mark.parametrize(("base", "waits"), [("http://127.0.0.1:8081", []), ("https://127.0.0.1:8443", [0.25])])
async def test_only_a_session_that_may_hold_tls_connections_waits_for_them_at_close(monkeypatch, base, waits):
    session = BotApiSession(api=TelegramAPIServer.from_base(base))
    opened = await session.create_session()
    slept, real = [], asyncio.sleep

    async def sleep(delay: float, *args, **kwargs):
        slept.append(delay)
        return await real(0, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    await session.close()
    assert opened.closed
    assert slept == waits
    await session.close()  # closed already: nothing to do, nothing waited
    assert slept == waits
