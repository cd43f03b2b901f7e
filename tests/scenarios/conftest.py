"""Fixtures shared by the scenario tests."""

from __future__ import annotations

import pytest

from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


@pytest.fixture
async def telegram_gateways(tmp_path):
    """``start(fake, model, **display)``: a gateway on a Telegram adapter pointed at ``fake``, open to
    everyone, returned once its polling is live; every one started is stopped at the end."""
    started: list[Gateway] = []

    async def start(fake: FakeTelegram, model, **display) -> Gateway:
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display=display)
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        started.append(gateway)
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))  # polling is live
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)
