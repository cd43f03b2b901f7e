"""Behind an egress proxy, what the adapters send outside their SDK clients goes through it too
(`platforms.proxies`): a Discord slash command's answer (the interaction webhooks' own session: the user saw
"thinking…" and never the answer), a Discord attachment's download, a Slack command's answer to its
``response_url``, and a webhook route's delivery, each ``deliver_url`` chosen for by its own host.

The real SDKs against the loopback fakes, through `ForwardProxy`: a host under ``.invalid`` is reached
through it alone."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes._discord_files import Upload
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.slack import SlackAdapter
from platforms.webhook import Route, WebhookAdapter
from tests.discord_client import AGENTS, join_heartbeat_threads
from tests.forward_proxy import ForwardProxy
from tests.platforms.sink import Sink

CREDENTIALS = "Basic " + base64.b64encode(b"proxyuser:pr0xy-pass").decode()
USER = 42


@pytest.fixture
async def proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ForwardProxy]:
    """A proxy that ``$http_proxy`` names, with a user and password."""
    async with ForwardProxy() as proxy:
        monkeypatch.setenv("http_proxy", proxy.url.replace("http://", "http://proxyuser:pr0xy-pass@"))
        yield proxy


async def test_a_discord_command_is_answered_through_the_proxy(proxy: ForwardProxy) -> None:
    async with FakeDiscord() as fake:
        where = f"discord.invalid:{fake.port}"
        adapter = DiscordAdapter(fake.token, api_base=f"http://{where}/api/v10", gateway_url=f"ws://{where}/gateway",
                                 client_factory=fake.client_factory, ready_timeout=5.0)
        sink = Sink()
        try:
            await adapter.start(sink, list(AGENTS))
            fake.push_interaction("agents", USER)
            [command] = await fake.wait_for(lambda: sink.inbound)
            await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                        idempotency_key="c1:0", reply_token=command.reply_token))
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["No subagents."]
    assert any(r.startswith(f"PATCH http://{where}/api/v10/webhooks/") for r in proxy.requests)
    assert set(proxy.credentials) == {CREDENTIALS}


async def test_a_discord_attachment_is_fetched_through_the_proxy(proxy: ForwardProxy) -> None:
    async with FakeDiscord() as fake:
        adapter = DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory,
                                 ready_timeout=5.0)
        sink = Sink()
        try:
            await adapter.start(sink, [])
            fake.push_dm(USER, "a file", files=[Upload("notes.md", b"# notes")])
            [message] = await fake.wait_for(lambda: sink.inbound)
            assert await adapter.download(message.attachments[0]) == b"# notes"
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
    assert any(r.startswith(f"GET {fake.url}/attachments/") for r in proxy.requests)


async def test_a_slack_commands_response_url_goes_straight_to_a_host_no_proxy_exempts(
        proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)  # slack-sdk's own first choice, for any URL
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        sink = Sink()
        try:
            await adapter.start(sink, [])
            await fake.push_slash_command("/agents", "U1", "DU1")
            [command] = await fake.wait_for(lambda: sink.inbound)
            await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                        idempotency_key="c1:0", reply_token=command.reply_token))
        finally:
            await adapter.stop()
    assert [c.params["text"] for c in fake.calls_to("response_url")] == ["No subagents."]
    assert proxy.requests == []


async def test_each_webhook_delivery_goes_as_its_deliver_urls_host_asks(
        proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """An outside receiver through the proxy; an inside one that ``$no_proxy`` exempts straight to it."""
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    async with WebhookReceiver() as outside, WebhookReceiver() as inside:
        outside_url = outside.url.replace("127.0.0.1", "hooks.invalid")
        adapter = WebhookAdapter({"out": Route("out-secret", outside_url), "in": Route("in-secret", inside.url)})
        await adapter.start(Sink())
        try:
            for chat in ("out:c1", "in:c1"):
                await adapter.send(Outbound(chat, None, "done", turn_id="t1", idempotency_key=f"{chat}:t1:0"))
        finally:
            await adapter.stop()
    assert [d.json["text"] for d in outside.deliveries + inside.deliveries] == ["done", "done"]
    assert proxy.requests == [f"POST {outside_url}"]
    assert proxy.credentials == [CREDENTIALS]
