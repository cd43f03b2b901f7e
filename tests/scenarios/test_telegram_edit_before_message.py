"""Over a webhook Telegram may deliver a user's edit before the message it edits (it posts updates over several
connections at once, and one answered 500 comes again after the updates that followed it): the message is answered
as edited, where the gateway, handed the edit first, found nothing to change and the message came as first
written. The real aiogram client inside a webhook-mode `TelegramAdapter` on the gateway's server, against
`FakeTelegram`, with the real `Gateway` (`platforms.telegram_webhook.EarlyEdits`)."""

from __future__ import annotations

from tests.platforms.telegram_client import edit_of
from tests.scenarios.telegram_webhook_gateway import webhook_gateway
from tests.scenarios.test_telegram_chat import fake, gateways, texts  # noqa: F401  (fixtures)


async def test_a_message_delivered_after_its_edit_is_answered_as_edited(fake, gateways):  # noqa: F811
    async with webhook_gateway(gateways):
        prod = fake.message_update(42, "deploy to prod")
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: texts(fake))
        assert await fake.deliver_webhook(prod) == 200  # delivered again: answered once
        await gateways.quiet()
        assert texts(fake) == ["echo: deploy to staging"]
