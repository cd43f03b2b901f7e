"""The wait a 429 discord.py does not retry itself asks for (`platforms.discord_errors`): one without
Discord's ``Via`` header, from Cloudflare or a proxy in between, whose ``Retry-After`` may be anything."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound, RateLimited
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

MESSAGES = "POST /channels/{channel_id}/messages"
USER = 42

fake = fake_discord()


@pytest.fixture
async def adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        pass

    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        yield adapter
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


def in_two_minutes() -> str:
    return email.utils.formatdate(time.time() + 120, usegmt=True)


@pytest.mark.parametrize(("retry_after", "text", "wait"), [
    ("12", None, 12.0),
    (None, None, 7.5),  # Discord's JSON body
    ("soon", None, 7.5),  # garbage: crashed the translation (ValueError) before
    ("nan", None, 7.5),
    ("-3", None, 7.5),
    ("soon", "<html>error code: 1015</html>", 300.0),  # Cloudflare's ban page: minutes (BAN_RETRY_AFTER)
    (in_two_minutes, None, 120.0),  # an HTTP-date
], ids=["seconds", "no-header", "garbage", "nan", "negative", "garbage-no-json", "http-date"])
async def test_a_429_without_via_is_rate_limited_for_the_wait_it_asks_for(
        fake: FakeDiscord, adapter: DiscordAdapter, retry_after: object, text: str | None, wait: float) -> None:
    headers = {} if retry_after is None else {"Retry-After": retry_after() if callable(retry_after) else retry_after}
    fake.fail_next(MESSAGES, 429, retry_after=7.5, headers=headers, text=text)
    channel = fake.dm_channel(USER)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(Outbound(channel, None, "hello", idempotency_key="t1:0"))
    assert caught.value.retry_after == pytest.approx(wait, abs=2.0)
    assert [c.status for c in fake.calls_to(MESSAGES)] == [429]  # discord.py does not retry it itself
    assert fake.bot_messages(channel) == []
