"""An iPhone photo sent as a file is HEIC, which no vision model is sent (only PNG, JPEG, GIF and WebP are). On
Slack, Telegram and Discord alike it was stored and listed as a file, and the user was told nothing: the model,
which cannot be shown it (nor read it: read_file takes text), answered a question about a picture it never saw.
Now the user is told, and so is the model; the file stays stored and listed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from agent.testing import FakeOpenAIServer
from gateway.testing import make_config, start_gateway
from platforms.fakes.discord import FakeDiscord, Upload
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads

HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64
NOTE = "I can't see IMG_0001.HEIC: it is a HEIC picture"


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(api_key="sk-test", default_text="A file arrived.") as server:
        yield server


def config(tmp_path, openai: FakeOpenAIServer, platform: str):
    model = {"provider": "openai", "name": "fake-model", "base_url": openai.base_url, "api_key": "sk-test",
             "max_retries": 0, "supports_vision": True}
    return make_config(tmp_path, platforms={platform: {"allow_all": True}}, model=model)


def told(openai: FakeOpenAIServer, replies: list[str]) -> None:
    note, answer = replies
    assert note.startswith(NOTE) and answer == "A file arrived."
    content = [m for m in openai.requests[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert isinstance(content, str) and content.startswith("what is this?")
    assert "/IMG_0001.HEIC (image/heic, 88 bytes)" in content  # still stored and listed
    assert "did not reach you: IMG_0001.HEIC (a HEIC picture, which you cannot be shown" in content


async def run(gateway, wait: Callable[[], object], replies: Callable[[], list[str]], openai) -> None:
    try:
        await wait()
        told(openai, replies())
    finally:
        await gateway.stop(grace=0)


async def test_on_slack(tmp_path, openai: FakeOpenAIServer) -> None:
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config(tmp_path, openai, "slack"), [adapter])
        await fake.push_file("DU1", "U1", HEIC, "IMG_0001.HEIC", mimetype="image/heic", text="what is this?")
        texts = lambda: [m.get("text", "") for m in fake.messages.get(("DU1", None), [])  # noqa: E731
                         if m.get("user") != "U1"]
        await run(gateway, lambda: fake.wait_for(lambda: len(texts()) >= 2, timeout=10), texts, openai)


async def test_on_telegram(tmp_path, openai: FakeOpenAIServer) -> None:
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config(tmp_path, openai, "telegram"), [adapter])
        fake.push_document(42, HEIC, "IMG_0001.HEIC", mime_type="image/heic", caption="what is this?")
        texts = lambda: [m["text"] for m in fake.messages["42"]]  # noqa: E731
        await run(gateway, lambda: fake.wait_for(lambda: len(texts()) >= 2, timeout=10), texts, openai)


async def test_on_discord(tmp_path, openai: FakeOpenAIServer) -> None:
    async with FakeDiscord() as fake:
        gateway = await start_gateway(config(tmp_path, openai, "discord"), [adapter_for(fake)])
        channel = fake.dm_channel(7)
        fake.push_dm(7, "what is this?", files=[Upload("IMG_0001.HEIC", HEIC, "image/heic")])
        texts = lambda: [m.content for m in fake.bot_messages(channel)]  # noqa: E731
        try:
            await run(gateway, lambda: fake.wait_for(lambda: len(texts()) >= 2, timeout=10), texts, openai)
        finally:
            await join_heartbeat_threads()
