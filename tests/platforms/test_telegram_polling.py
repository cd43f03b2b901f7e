"""Telegram polling's connection state (`platforms.telegram_polling`): the real aiogram polling
loop against FakeTelegram, which answers getUpdates with 401 for a revoked token and with 409 when
a second poller or a webhook is in the way, as Telegram does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from platforms.connection import Connects
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.connection_state import status
from tests.platforms.sink import Sink

POLL = 1
"""Seconds each long poll waits: the conflict clears ``POLL`` + 5 s after the other poller stops."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def polling(fake: FakeTelegram) -> AsyncIterator[tuple[TelegramAdapter, Sink]]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=POLL), Sink()
    await adapter.start(sink)
    yield adapter, sink
    await adapter.stop()


async def test_connected_once_polling_and_no_connection_for_a_webhook(fake: FakeTelegram, polling) -> None:
    adapter, _ = polling
    assert isinstance(adapter, Connects)
    assert adapter.connection().status == "connected"
    webhook = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook", webhook_url="https://bot.example/tg")
    try:
        assert webhook.connection().status == "no_connection"
    finally:
        await webhook.stop()


async def test_a_failed_poll_is_reconnecting_and_polling_recovers(fake: FakeTelegram, polling) -> None:
    adapter, sink = polling
    fake.fail_next("getUpdates", 502)
    assert "getUpdates failed" in await status(adapter, fake, "reconnecting")
    fake.push_message(42, "still there?")
    await status(adapter, fake, "connected")
    await fake.wait_for(lambda: sink.inbound)


async def test_failed_polls_are_one_warning_and_one_recovery_not_aiograms_error_each(
        fake: FakeTelegram, polling, caplog: pytest.LogCaptureFixture) -> None:
    adapter, sink = polling
    with caplog.at_level(logging.INFO), caplog.at_level(logging.DEBUG, logger="aiogram.dispatcher"):
        fake.fail_next("getUpdates", 502)
        await status(adapter, fake, "reconnecting")
        fake.fail_next("getUpdates", 502)  # a second failure in a row: no second line of ours either
        fake.push_message(42, "still there?")
        await fake.wait_for(lambda: sink.inbound, timeout=15)
        await status(adapter, fake, "connected")
    ours = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "platforms.connection"]
    assert [level for level, _ in ours] == ["WARNING", "INFO"], ours
    assert "connection lost, reconnecting: getUpdates failed" in ours[0][1]
    assert "connected again" in ours[1][1]
    aiogram = [r for r in caplog.records if r.name == "aiogram.dispatcher" and r.getMessage().startswith(
        ("Failed to fetch updates", "Sleep for", "Connection established"))]
    assert len(aiogram) >= 3  # still there for whoever asks for DEBUG
    assert {r.levelname for r in aiogram} == {"DEBUG"}


async def test_a_poll_refused_for_flood_control_waits_as_long_as_telegram_says(fake: FakeTelegram, polling) -> None:
    # aiogram alone polls again after its 1-5 s back-off, into the same 429, as long as it lasts: after
    # this one failure, 1 s (its first back-off), which the 2 s asked for tells apart.
    adapter, sink = polling
    loop, polls = asyncio.get_running_loop(), len(fake.calls_to("getUpdates"))
    fake.fail_next("getUpdates", 429, retry_after=2)
    await fake.wait_for(lambda: len(fake.calls_to("getUpdates")) > polls, timeout=POLL + 5)  # the refused one
    refused = loop.time()
    assert "retry after 2" in await status(adapter, fake, "reconnecting")
    await fake.wait_for(lambda: len(fake.calls_to("getUpdates")) > polls + 1, timeout=10)
    assert loop.time() - refused >= 2
    fake.push_message(42, "still there?")
    await fake.wait_for(lambda: sink.inbound)


async def test_a_revoked_token_is_down_for_good_and_stops_polling(fake: FakeTelegram, polling,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    adapter, _ = polling
    old = fake.token
    with caplog.at_level(logging.INFO):
        fake.token = "123456:NEW-token"  # revoked in BotFather: the old one gets 401 from now on
        reason = await status(adapter, fake, "down")
        await fake.wait_for(lambda: any(r.getMessage() == "Polling stopped" for r in caplog.records))
    assert "401" in reason and "platforms.telegram.token" in reason and old not in reason
    errors = [r.getMessage() for r in caplog.records if r.name == "platforms.connection" and r.levelno == logging.ERROR]
    assert len(errors) == 1 and "401" in errors[0] and old not in errors[0]
    assert adapter.connection().status == "down"


async def poll_as_another_instance(fake: FakeTelegram) -> None:
    """A second process polling the same bot, as a second gateway does: each of its polls ends ours."""
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.post(f"{fake.base_url}/bot{fake.token}/getUpdates", json={"timeout": POLL}) as r:
                await r.read()
            await asyncio.sleep(0.05)


async def test_a_second_poller_is_down_with_its_cause_until_it_stops(fake: FakeTelegram, polling,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    adapter, sink = polling
    other = asyncio.ensure_future(poll_as_another_instance(fake))
    try:
        with caplog.at_level(logging.ERROR, logger="platforms.connection"):
            reason = await status(adapter, fake, "down")
        assert "another process is polling this bot" in reason and "terminated by other getUpdates" in reason
        (error,) = [r.getMessage() for r in caplog.records if "another process is polling" in r.getMessage()]
        assert "keeps trying" in error and "cannot fix it" not in error  # it does recover by itself
    finally:
        other.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await other
    # Polling went on: once the other poller is gone, the bot is back by itself.
    await status(adapter, fake, "connected", timeout=POLL + 5 + 5)
    fake.push_message(42, "hello again")
    await fake.wait_for(lambda: sink.inbound)


async def test_a_webhook_set_elsewhere_is_down_until_deleted(fake: FakeTelegram, polling) -> None:
    adapter, sink = polling
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{fake.base_url}/bot{fake.token}/setWebhook",
                                json={"url": "https://elsewhere.example/hook"}) as r:
            assert r.status == 200
        assert "webhook is set" in await status(adapter, fake, "down")
        async with session.post(f"{fake.base_url}/bot{fake.token}/deleteWebhook", json={}) as r:
            assert r.status == 200
    await status(adapter, fake, "connected", timeout=POLL + 5 + 5)
    fake.push_message(42, "back")
    await fake.wait_for(lambda: sink.inbound)
