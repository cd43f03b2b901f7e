"""An edit of a message answered already, then Telegram delivering that message again (its first answer lost, say to
a crash): the message is dropped as a repeat, not answered again as edited, also when a restart comes between the
answer and the edit, so the edit is kept in the store for the message (`platforms.telegram_webhook.EarlyEdits`). The
real aiogram client inside a webhook-mode `TelegramAdapter` on the gateway's server, against `FakeTelegram`, with the
real `Gateway` on one state directory for both processes."""

from __future__ import annotations

from tests.scenarios.test_telegram_chat import fake, gateways, texts  # noqa: F401  (fixtures)
from tests.scenarios.test_telegram_edit_before_message import edit_of
from tests.scenarios.test_telegram_edit_before_message_restart import webhook_gateway


async def test_a_message_answered_before_a_restart_and_edited_after_it_is_not_answered_again(
        fake, gateways) -> None:  # noqa: F811
    prod = fake.message_update(42, "deploy to prod")
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: texts(fake))
        await gateways.quiet()
    async with webhook_gateway(gateways):
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
        assert await fake.deliver_webhook(prod) == 200
        await gateways.quiet()
    assert texts(fake) == ["echo: deploy to prod"]
