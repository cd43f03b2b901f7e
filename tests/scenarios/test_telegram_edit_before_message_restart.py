"""A webhook's edit delivered before its message, then a restart before the message comes: the message is still
answered as edited. The edit was kept in memory only (`platforms.telegram_webhook.EarlyEdits`), Telegram had been
answered 200 for it, and the next process answered the message as first written. The real aiogram client inside a
webhook-mode `TelegramAdapter` on the gateway's server, against `FakeTelegram`, with the real `Gateway` on one state
directory for both processes."""

from __future__ import annotations

from tests.platforms.telegram_client import edit_of
from tests.scenarios.telegram_webhook_gateway import webhook_gateway
from tests.scenarios.test_telegram_chat import fake, gateways, texts  # noqa: F401  (fixtures)


async def test_an_edit_delivered_before_its_message_outlives_a_restart(fake, gateways):  # noqa: F811
    prod = fake.message_update(42, "deploy to prod")
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: texts(fake))
        await gateways.quiet()
    assert texts(fake) == ["echo: deploy to staging"]
