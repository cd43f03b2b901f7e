"""A webhook's edit delivered before its message, then a restart before the message comes: the message is still
answered as edited. The edit was kept in memory only (`platforms.telegram_webhook.EarlyEdits`), Telegram had been
answered 200 for it, and the next process answered the message as first written. The real aiogram client inside a
webhook-mode `TelegramAdapter` on the gateway's server, against `FakeTelegram`, with the real `Gateway` on one state
directory for both processes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.server import Server
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_telegram_chat import EVERYONE, Gateways, fake, gateways, texts  # noqa: F401  (fixtures)
from tests.scenarios.test_telegram_edit_before_message import edit_of


@contextlib.asynccontextmanager
async def webhook_gateway(gateways: Gateways) -> AsyncIterator[TelegramAdapter]:  # noqa: F811
    """One process: a gateway whose Telegram adapter takes updates over a webhook on the gateway's server."""
    model = ScriptedModel({"parent": lambda request: {"text": f"echo: {request.messages[-1]['content']}"}})
    adapter = gateways.adapter(mode="webhook", webhook_url="http://127.0.0.1/telegram", webhook_secret="s3cret")
    gateway = Gateway(AgentHost(gateways.config(platforms=EVERYONE), model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    adapter.webhook_url = f"{server.url}/telegram"
    try:
        await gateway.start()
        gateways.running.append(gateway)
        yield adapter
    finally:
        await server.stop()
        if gateway in gateways.running:
            await gateways.stop(gateway)


async def test_an_edit_delivered_before_its_message_outlives_a_restart(fake, gateways):  # noqa: F811
    prod = fake.message_update(42, "deploy to prod")
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: texts(fake))
        await gateways.quiet()
    assert texts(fake) == ["echo: deploy to staging"]
