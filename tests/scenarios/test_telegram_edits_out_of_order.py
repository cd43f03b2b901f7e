"""Over a webhook Telegram may deliver a user's two edits of a message waiting for its turn newest first (it posts
updates over several connections at once, and one answered 500 comes again after those that followed it): the
turn answers the newer edit. The older, handed over last, changed the message back, and the turn answered what the
user had already corrected; also when the older came to the next process, which replays the message. The real
aiogram client inside a webhook-mode `TelegramAdapter` on the gateway's server, against `FakeTelegram`, with the
real `Gateway` on one state directory (`platforms.telegram_edits`)."""

from __future__ import annotations

from typing import Any

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from platforms.fakes.telegram import FakeTelegram
from tests.platforms.telegram_client import edit_of
from tests.scenarios.telegram_webhook_gateway import webhook_gateway
from tests.scenarios.test_telegram_chat import fake, gateways, texts  # noqa: F401  (fixtures)
from tests.scenarios.test_telegram_edits_waiting import gated_echo, queued


async def edited_while_waiting(telegram: FakeTelegram, gateway: Gateway, model: ScriptedModel) -> dict[str, Any]:
    """"first" held running, "deploy to prod" waiting behind it, then its edit to "deploy to qa" made two updates
    after it: the update of "deploy to prod"."""
    first, prod = telegram.message_update(42, "first"), telegram.message_update(42, "deploy to prod")
    assert await telegram.deliver_webhook(first) == 200
    await model.reached("first")
    assert await telegram.deliver_webhook(prod) == 200
    await telegram.wait_for(lambda: queued(gateway))
    assert await telegram.deliver_webhook(edit_of(prod, "deploy to qa", after=2)) == 200
    return prod


async def test_an_older_edit_delivered_after_a_newer_one_leaves_the_waiting_message_as_newer(
        fake, gateways):  # noqa: F811
    model = gated_echo()
    async with webhook_gateway(gateways, model, busy_input_mode="queue") as (gateway, _):
        prod = await edited_while_waiting(fake, gateway, model)
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        model.release("first")
        await fake.wait_for(lambda: len(texts(fake)) == 2)
        await gateways.quiet()
    assert texts(fake) == ["echo: first", "echo: deploy to qa"]


async def test_an_older_edit_delivered_to_the_next_process_leaves_the_replayed_message_as_newer(
        fake, gateways):  # noqa: F811
    model = gated_echo()
    async with webhook_gateway(gateways, model, busy_input_mode="queue") as (gateway, _):
        prod = await edited_while_waiting(fake, gateway, model)
    model = gated_echo()  # the running turn runs again after the start, the waiting message after it
    async with webhook_gateway(gateways, model, busy_input_mode="queue"):
        await model.reached("first")
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        model.release("first")
        await fake.wait_for(lambda: len(texts(fake)) == 2)
        await gateways.quiet()
    assert texts(fake) == ["echo: first", "echo: deploy to qa"]
