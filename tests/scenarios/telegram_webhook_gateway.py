"""`webhook_gateway`: one gateway process whose `TelegramAdapter` takes updates over a webhook on the gateway's own
server, as a deployment runs it, against the `FakeTelegram` of a `Gateways`; and `echo`, a model answering each
message with its text."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.server import Server
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_telegram_chat import EVERYONE, Gateways


def echo() -> ScriptedModel:
    """Answers each message with ``echo:`` and the message's text."""
    return ScriptedModel({"parent": lambda request: {"text": f"echo: {request.messages[-1]['content']}"}})


@contextlib.asynccontextmanager
async def webhook_gateway(gateways: Gateways, model: ScriptedModel | None = None,
                          **display: Any) -> AsyncIterator[tuple[Gateway, TelegramAdapter]]:
    """A gateway open to everyone on the test's state directory, with ``display`` settings, answering with ``model``
    (a new `echo` unless given), started; stopped at the end, so the next one on that directory is a restart."""
    model = echo() if model is None else model
    config = gateways.config(platforms=EVERYONE, display=display)
    adapter = gateways.adapter(mode="webhook", webhook_url="http://127.0.0.1/telegram", webhook_secret="s3cret")
    gateway = Gateway(AgentHost(config, model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    adapter.webhook_url = f"{server.url}/telegram"  # now that the server has its port
    try:
        await gateway.start()
        gateways.running.append(gateway)
        yield gateway, adapter
    finally:
        await server.stop()
        if gateway in gateways.running:
            await gateways.stop(gateway)
