"""Bursts on Telegram, end to end: several messages of one chat arriving while its turn runs are
answered once each, in the order they were sent (the real aiogram client against `FakeTelegram`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.plugin_modules import plugin_module

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
EVERYONE = {"telegram": {"allow_all": True}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def start(fake: FakeTelegram, tmp_path, model, plugins=(), **display) -> Gateway:
    config = make_config(tmp_path, platforms=EVERYONE, display={"progress": "off", **display}, plugins=list(plugins))
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=model)
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))  # polling is live
    return gateway


def texts(fake: FakeTelegram, chat: int = 42) -> list[str]:
    return [m["text"] for m in fake.messages[str(chat)]]


def answering(request: ModelRequest) -> dict:
    """Answers each message by its first line; the first turn waits for the test at ``first``."""
    said = str(request.messages[-1]["content"]).splitlines()[0]
    if said == "start":
        return {"wait": "first", "text": "answer to start"}
    return {"text": f"answer to {said}"}


async def test_a_text_sent_after_a_photo_in_steer_mode_waits_for_the_photos_turn(fake, tmp_path):
    model = ScriptedModel({"parent": answering})
    gateway = await start(fake, tmp_path, model, busy_input_mode="steer")
    try:
        fake.push_message(42, "start")
        await model.reached("first")
        fake.push_photo(42, PNG, caption="here is the chart")  # waits for a turn of its own
        fake.push_message(42, "what does it show?")  # about the photo: not to be answered before it
        await fake.wait_for(lambda: not fake.pending)  # both were taken in
        model.release("first")
        await fake.wait_for(lambda: len(texts(fake)) == 3)
        await settled(gateway)
        assert texts(fake) == ["answer to start", "answer to here is the chart", "answer to what does it show?"]
    finally:
        await gateway.stop(grace=0)


SLOW_COMMANDS = """
import asyncio
import threading

release = asyncio.Event()
released = threading.Event()


async def report(args, context):
    await release.wait()  # asking another service, say
    return "the report"


def status(args, context):
    released.wait(5)  # a plain function that blocks: a synchronous HTTP call, say
    return "the status"


def register(ctx):
    ctx.register_command("report", report, "a slow report")
    ctx.register_command("status", status, "a slow status")
"""


@pytest.mark.parametrize("command", ["/report", "/status"])
async def test_a_slow_plugin_command_holds_up_no_other_chat(fake, tmp_path, monkeypatch, command):
    plugin = plugin_module(tmp_path, monkeypatch, "slow_commands_plugin", SLOW_COMMANDS)
    gateway = await start(fake, tmp_path, ScriptedModel({"parent": answering}), plugins=["slow_commands_plugin"])
    try:
        fake.push_message(42, command)
        fake.push_message(43, "hello")  # another chat, meanwhile
        await fake.wait_for(lambda: texts(fake, 43))
        assert texts(fake, 42) == []  # still working on it
        plugin.release.set()
        plugin.released.set()
        await fake.wait_for(lambda: texts(fake, 42))
        await settled(gateway)
        assert (texts(fake, 42), texts(fake, 43)) == ([f"the {command[1:]}"], ["answer to hello"])
    finally:
        plugin.released.set()
        await gateway.stop(grace=0)
