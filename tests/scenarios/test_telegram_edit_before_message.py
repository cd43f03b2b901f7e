"""Over a webhook Telegram may deliver a user's edit before the message it edits (it posts updates over several
connections at once, and one answered 500 comes again after the updates that followed it): the message is answered
as edited, where the gateway, handed the edit first, found nothing to change and the message came as first
written. The real aiogram client inside a webhook-mode `TelegramAdapter` on the gateway's server, against
`FakeTelegram`, with the real `Gateway` (`platforms.telegram_webhook.EarlyEdits`)."""

from __future__ import annotations

from typing import Any

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.server import Server
from tests.scenarios.test_telegram_chat import EVERYONE, fake, gateways, texts  # noqa: F401  (fixtures)


def edit_of(update: dict[str, Any], text: str) -> dict[str, Any]:
    """Telegram's ``edited_message`` for the message of ``update``, made after it."""
    message = {**update["message"], "text": text, "edit_date": update["message"]["date"] + 1}
    message.pop("entities", None)
    return {"update_id": update["update_id"] + 1, "edited_message": message}


async def test_a_message_delivered_after_its_edit_is_answered_as_edited(fake, gateways):  # noqa: F811
    model = ScriptedModel({"parent": lambda request: {"text": f"echo: {request.messages[-1]['content']}"}})
    adapter = gateways.adapter(mode="webhook", webhook_url="http://127.0.0.1/telegram", webhook_secret="s3cret")
    gateway = Gateway(AgentHost(gateways.config(platforms=EVERYONE), model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    adapter.webhook_url = f"{server.url}/telegram"
    try:
        await gateway.start()
        gateways.running.append(gateway)
        prod = fake.message_update(42, "deploy to prod")
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: texts(fake))
        assert await fake.deliver_webhook(prod) == 200  # delivered again: answered once
        await gateways.quiet()
        assert texts(fake) == ["echo: deploy to staging"]
    finally:
        await server.stop()
