"""Over a webhook Telegram may deliver a user's two edits of a message waiting for its turn newest first (it posts
updates over several connections at once, and one answered 500 comes again after those that followed it): the
turn answers the newer edit. The older, handed over last, changed the message back, and the turn answered what the
user had already corrected; also when the older came to the next process, which replays the message. The real
aiogram client inside a webhook-mode `TelegramAdapter` on the gateway's server, against `FakeTelegram`, with the
real `Gateway` on one state directory (`platforms.telegram_edits`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.server import Server
from tests.platforms.test_telegram_early_edits_order import edit_of
from tests.scenarios.test_telegram_chat import EVERYONE, Gateways, fake, gateways, texts  # noqa: F401  (fixtures)
from tests.scenarios.test_telegram_edits_waiting import gated_echo, queued


@contextlib.asynccontextmanager
async def webhook_gateway(gateways: Gateways, model: ScriptedModel) -> AsyncIterator[Gateway]:  # noqa: F811
    """One process: a gateway queueing a chat's messages behind its running turn, its Telegram adapter taking
    updates over a webhook on the gateway's server."""
    adapter = gateways.adapter(mode="webhook", webhook_url="http://127.0.0.1/telegram", webhook_secret="s3cret")
    config = gateways.config(platforms=EVERYONE, display={"busy_input_mode": "queue"})
    gateway = Gateway(AgentHost(config, model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    adapter.webhook_url = f"{server.url}/telegram"
    try:
        await gateway.start()
        gateways.running.append(gateway)
        yield gateway
    finally:
        await server.stop()
        if gateway in gateways.running:
            await gateways.stop(gateway)


async def test_an_older_edit_delivered_after_a_newer_one_leaves_the_waiting_message_as_newer(
        fake, gateways):  # noqa: F811
    model = gated_echo()
    first, prod = fake.message_update(42, "first"), fake.message_update(42, "deploy to prod")
    async with webhook_gateway(gateways, model) as gateway:
        assert await fake.deliver_webhook(first) == 200
        await model.reached("first")
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: queued(gateway))
        assert await fake.deliver_webhook(edit_of(prod, "deploy to qa", after=2)) == 200
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        model.release("first")
        await fake.wait_for(lambda: len(texts(fake)) == 2)
        await gateways.quiet()
    assert texts(fake) == ["echo: first", "echo: deploy to qa"]


async def test_an_older_edit_delivered_to_the_next_process_leaves_the_replayed_message_as_newer(
        fake, gateways):  # noqa: F811
    first, prod = fake.message_update(42, "first"), fake.message_update(42, "deploy to prod")
    model = gated_echo()
    async with webhook_gateway(gateways, model) as gateway:
        assert await fake.deliver_webhook(first) == 200
        await model.reached("first")
        assert await fake.deliver_webhook(prod) == 200
        await fake.wait_for(lambda: queued(gateway))
        assert await fake.deliver_webhook(edit_of(prod, "deploy to qa", after=2)) == 200
    model = gated_echo()  # the running turn runs again after the start, the waiting message after it
    async with webhook_gateway(gateways, model):
        await model.reached("first")
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        model.release("first")
        await fake.wait_for(lambda: len(texts(fake)) == 2)
        await gateways.quiet()
    assert texts(fake) == ["echo: first", "echo: deploy to qa"]
