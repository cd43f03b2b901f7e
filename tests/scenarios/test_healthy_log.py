"""A healthy gateway's log: every platform on (Telegram, Slack, Discord through their real SDKs against the
loopback fakes, a webhook route and the web chat), the demo model answering a message and delegating a list
to subagents on each. Nothing is logged at WARNING or above, and no line quotes what a user wrote."""

from __future__ import annotations

import logging

import aiohttp

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import settled
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post
from tests.web_client import get_history, post_message

SECRET = "healthy-log-secret"
WORDS = "PRIVATEWORDS"
"""In every user's message: no log line may quote them."""
RESULTS = "[demo] Results:"


def messages(chat: str) -> list[str]:
    return [f"hello {WORDS} {chat}", f"Compare these {WORDS}:\n- apples {chat}\n- pears {chat}"]


async def test_a_healthy_gateway_logs_no_warning_and_no_user_text(tmp_path, caplog) -> None:
    async with (FakeTelegram() as tg, FakeSlack() as slack, FakeDiscord() as discord,
                WebhookReceiver(SECRET) as receiver, aiohttp.ClientSession() as http):
        config = config_from_mapping({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"demo": {"child_steps": 1, "step_seconds": 0}},
            "platforms": {
                "telegram": {"enabled": True, "token": tg.token, "api_base": tg.base_url, "allow_all": True},
                "slack": {"enabled": True, "bot_token": slack.bot_token, "app_token": slack.app_token,
                          "api_base": slack.api_base, "allow_all": True},
                "discord": {"enabled": True, "token": discord.token, "api_base": discord.api_base,
                            "gateway_url": discord.gateway_url, "allow_all": True},
                "webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET, "deliver_url": receiver.url}}},
                "web": {"enabled": True}}}).config
        caplog.set_level(logging.INFO)
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        try:
            await gateway.start()
            await server.start()
            for n, text in enumerate(messages("t")):
                tg.push_message(42, text)
                await tg.wait_for(lambda n=n: sum(RESULTS in m["text"] or "offline demo" in m["text"]
                                                  for m in tg.messages.get("42", [])) > n, timeout=20)
            for n, text in enumerate(messages("s")):
                await slack.push_dm("U1", text)
                await slack.wait_for(lambda n=n: sum(RESULTS in t or "offline demo" in t
                                                     for t in slack.texts(slack.dm_channel("U1"))) > n, timeout=20)
            for n, text in enumerate(messages("d")):
                discord.push_dm(7, text)
                await discord.wait_for(lambda n=n: sum(RESULTS in m.content or "offline demo" in m.content
                                                       for m in discord.bot_messages(discord.dm_channel(7))) > n,
                                       timeout=20)
            for text in messages("w"):
                assert (await signed_post(f"{server.url}/webhooks/hook", SECRET, {"text": text, "chat_id": "9"})
                        ).status == 202
            await receiver.wait_for(lambda: any(RESULTS in p["text"] for p in receiver.payloads), timeout=20)
            for n, text in enumerate(messages("e")):
                assert (await post_message(http, server.url, "c1", text, key=f"healthy-{n:04d}"))[0] == 202
            await settled(gateway, timeout=20)
            assert any(RESULTS in m["text"] for m in await get_history(http, server.url, "c1"))
        finally:
            await server.stop()
            await gateway.stop(grace=0)
    loud = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    assert not [r.getMessage() for r in caplog.records if WORDS in r.getMessage()]
    assert [r for r in caplog.records if r.levelno == logging.INFO]  # INFO lines were captured, and looked at
