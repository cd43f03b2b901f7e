"""A second gateway on the same Telegram token takes the first one's webhook away at its start (polling
deletes it, a webhook-mode start replaces it): the gateway that starts says so, once, naming the host only."""

from __future__ import annotations

import logging

import pytest

from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

OTHERS = "https://prod.example/tg/s3cret-path"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "webhook to" in r.getMessage()]


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_a_start_that_takes_another_gateways_webhook_says_so(mode: str, caplog) -> None:
    async with FakeTelegram() as fake:
        fake.webhook_url = OTHERS  # the gateway in webhook mode, running elsewhere
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1, mode=mode,
                                  webhook_url="https://staging.example/tg" if mode == "webhook" else None)
        await adapter.start(Sink())
        try:
            [warned] = _warnings(caplog)
            assert "prod.example" in warned and "only one gateway may use a Telegram token" in warned
            assert "s3cret-path" not in warned and fake.token not in warned
        finally:
            await adapter.stop()


async def test_a_restart_on_its_own_webhook_or_with_none_set_says_nothing(caplog) -> None:
    async with FakeTelegram() as fake:
        ours = "https://bot.example/tg"
        for mode, url in (("polling", None), ("webhook", ours), ("webhook", ours)):  # the second: a restart
            adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1, mode=mode, webhook_url=url)
            await adapter.start(Sink())
            await adapter.stop()
        assert _warnings(caplog) == []
