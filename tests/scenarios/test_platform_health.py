"""A deaf platform is seen: /healthz, the ``switchboard_platform_up`` gauge and the console show
each platform's connection, and a platform that is ``down`` makes /healthz answer 503 while the
other platforms keep serving. The real aiogram client polls FakeTelegram over loopback HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.gateway.observing import samples, served
from tests.gateway.test_console import next_state


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def get(url: str) -> tuple[int, str | dict]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        body = await response.json() if response.content_type == "application/json" else await response.text()
        return response.status, body


async def test_a_revoked_token_while_running_shows_in_healthz_metrics_and_console(tmp_path, fake) -> None:
    telegram = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    web = RecordingAdapter("chat")  # a platform with no connection of its own
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    gateway = await start_gateway(config, [telegram, web])
    try:
        async with served(gateway) as server:
            status, health = await get(f"{server.url}/healthz")
            assert status == 200 and health["status"] == "ok" and health["platforms"] == ["chat", "telegram"]
            assert health["down"] == []
            assert health["connections"]["telegram"]["status"] == "connected"
            assert health["connections"]["chat"]["status"] == "no_connection"
            metrics = samples((await get(f"{server.url}/metrics"))[1])
            assert metrics("switchboard_platform_up", platform="telegram") == 1
            assert metrics("switchboard_platform_up", platform="chat") == 1

            fake.token = "123456:NEW-token"  # revoked in BotFather while the gateway runs
            await fake.wait_for(lambda: telegram.connection().status == "down")

            status, health = await get(f"{server.url}/healthz")
            assert status == 503 and health["status"] == "down" and health["down"] == ["telegram"]
            assert "401" in health["connections"]["telegram"]["reason"]
            assert health["platforms"] == ["chat", "telegram"]
            metrics = samples((await get(f"{server.url}/metrics"))[1])
            assert metrics("switchboard_platform_up", platform="telegram") == 0
            assert metrics("switchboard_platform_up", platform="chat") == 1
            _, state = await get(f"{server.url}/console/api/state")
            shown = {p["name"]: p["connection"] for p in state["platforms"]}
            assert shown["telegram"]["status"] == "down" and "401" in shown["telegram"]["reason"]

            # The gateway stays up: the other platform is still answered.
            await web.say("hello")
            await settled(gateway)
            assert web.messages
    finally:
        await gateway.stop(grace=0)


async def test_the_console_page_is_told_when_a_platform_is_back_though_nothing_else_changed(tmp_path, fake) -> None:
    telegram = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    gateway = await start_gateway(make_config(tmp_path, platforms={"telegram": {"allow_all": True}}), [telegram])
    try:
        async with served(gateway) as server, aiohttp.ClientSession() as http, \
                http.get(f"{server.url}/console/api/events") as events:

            async def shown(status: str) -> dict:
                while (state := await next_state(events))["platforms"][0]["connection"]["status"] != status:
                    pass
                return state

            await shown("connected")
            fake.fail_next("getUpdates", 409)  # a second poller for a moment: logged, so the page shows it too
            assert "another process is polling" in (await shown("down"))["platforms"][0]["connection"]["reason"]
            # Back: the chats, turns, outbox and warnings stay as they were.
            await fake.wait_for(lambda: telegram.connection().status == "connected", timeout=15)
            # The stream is looked at every second: a few seconds is plenty, never is the defect.
            await asyncio.wait_for(shown("connected"), timeout=5)
    finally:
        await gateway.stop(grace=0)
