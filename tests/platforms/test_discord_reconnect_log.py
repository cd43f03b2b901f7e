"""discord.py's reconnects while Discord cannot be reached: a line each, not a traceback each."""

from __future__ import annotations

import asyncio
import io
import logging

import aiohttp
import pytest
from yarl import URL

from gateway.logging import logging_installed
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads, long_backoff
from tests.platforms.sink import Sink


async def test_a_reconnect_to_a_discord_that_cannot_be_reached_is_one_warning_line(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    waiting = long_backoff(monkeypatch)  # one try, then the stop while it waits
    fake = await FakeDiscord().start()
    adapter = adapter_for(fake)
    await adapter.start(Sink())
    try:
        with caplog.at_level(logging.INFO, logger="discord"):
            await fake.close()  # Discord gone: the RESUME's connection is refused
            await asyncio.wait_for(waiting.wait(), 10)
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    tries = [r for r in caplog.records if r.name == "discord.client" and "again in" in r.getMessage()]
    assert tries, [r.getMessage() for r in caplog.records]
    line = tries[0]
    assert (line.levelname, line.exc_info, line.exc_text) == ("WARNING", None, None)
    assert line.getMessage().startswith("discord: the gateway connection failed (")
    assert line.getMessage().endswith("); discord.py tries again in 30.00 s")
    assert "Error" in line.getMessage()  # the error's type, with its words
    assert not [r for r in caplog.records if r.name.startswith("discord") and r.exc_info]


def test_the_line_goes_through_the_logs_redaction_whole() -> None:
    stream = io.StringIO()
    refused = aiohttp.ClientResponseError(
        aiohttp.RequestInfo(URL("http://proxyuser:pr0xy-s3cret-f1@proxy:3128"), "GET", {}), (), status=407,
        message="Proxy Authentication Required")
    with logging_installed("INFO", stream=stream, secrets=["pr0xy-s3cret-f1"], repeat_window=0):
        try:
            raise refused
        except aiohttp.ClientError:  # as discord.py's Client.connect logs it
            logging.getLogger("discord.client").exception("Attempting a reconnect in %.2fs", 1.5)
    out = stream.getvalue()
    assert out.count("\n") == 1 and "Traceback" not in out, out
    assert "discord: the gateway connection failed (ClientResponseError: 407, message='Proxy Authentication" in out
    assert "discord.py tries again in 1.50 s" in out and "pr0xy-s3cret" not in out
