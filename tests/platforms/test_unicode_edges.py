"""Lone surrogates at every adapter's edges: never passed on, in either direction.

In: JSON may spell a lone surrogate (``"\\ud800"``) and every SDK hands it over as it
parsed it; a terminal passes undecodable bytes on. Each adapter's Inbound carries U+FFFD.
Out: a model may emit one; no SDK can encode it, so the platform gets U+FFFD instead of the
message failing for good.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound, has_surrogates, scalar_text
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.local import LocalAdapter
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from platforms.webhook import WebhookAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads

LONE = "bad \ud800 text \udfff"
REPAIRED = "bad \ufffd text \ufffd"


class Sink:
    def __init__(self) -> None:
        self.inbound: list[Inbound] = []
        self.arrived = asyncio.Event()

    async def __call__(self, inbound: Inbound) -> None:
        self.inbound.append(inbound)
        self.arrived.set()

    async def first(self) -> Inbound:
        await asyncio.wait_for(self.arrived.wait(), 10)
        return self.inbound[0]


def assert_clean(inbound: Inbound) -> None:
    for name in ("platform", "chat_id", "thread_id", "user_id", "user_name", "text", "event_id", "reply_token"):
        value = getattr(inbound, name)
        assert value is None or not has_surrogates(value), name
        if value is not None:
            value.encode("utf-8")  # what SQLite and every receiver need


def test_scalar_text_joins_pairs_and_replaces_lone_surrogates() -> None:
    assert scalar_text("plain") == "plain"
    assert scalar_text("é😀") == "é😀"
    assert scalar_text("\ud83d\ude00") == "😀"  # a pair spelt as two code points is the character
    assert scalar_text(LONE) == REPAIRED
    assert scalar_text("\ude00\ud83d") == "\ufffd\ufffd"  # the wrong order is no pair


def test_an_inbound_cannot_hold_a_lone_surrogate() -> None:
    inbound = Inbound("webhook", "chat\ud800", "t\udc00", "u\udfff", "n\ud801", LONE, "e\udbff", reply_token="r\udc01")
    assert_clean(inbound)
    assert inbound.text == REPAIRED and inbound.chat_id == "chat\ufffd"
    ordinary = Inbound("telegram", "1", None, "2", None, "héllo 😀", "3")
    assert ordinary.text == "héllo 😀" and ordinary.thread_id is None


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username="switchboard_bot") as fake:
        yield fake


async def test_telegram(telegram: FakeTelegram) -> None:
    adapter, sink = TelegramAdapter(telegram.token, api_base=telegram.base_url), Sink()
    await adapter.start(sink)
    try:
        telegram.push_message(42, LONE, user_id=42, username="al\udc80ice")
        inbound = await sink.first()
        sent = await adapter.send(Outbound("42", None, LONE))
        await adapter.edit("42", None, sent.message_id, LONE + "!")
    finally:
        await adapter.stop()
    assert_clean(inbound)
    assert inbound.text == REPAIRED and inbound.user_name == "al\ufffdice"
    [message] = telegram.messages["42"]
    assert message["text"] == REPAIRED + "!" and message["edits"] == [REPAIRED + "!"]


async def test_slack() -> None:
    async with FakeSlack(ack_timeout=2.0) as fake:
        adapter, sink = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base), Sink()
        await adapter.start(sink)
        try:
            await fake.push_dm("U1", LONE)
            inbound = await sink.first()
            sent = await adapter.send(Outbound(inbound.chat_id, None, LONE))
            await adapter.edit(inbound.chat_id, None, sent.message_id, LONE + "!")
            shown = fake.texts(inbound.chat_id)
        finally:
            await adapter.stop()
    assert_clean(inbound)
    assert inbound.text == REPAIRED
    assert shown[-1] == REPAIRED + "!"


async def test_discord() -> None:
    async with FakeDiscord() as fake:
        adapter = adapter_for(fake)
        sink = Sink()
        await adapter.start(sink)
        try:
            fake.push_dm(42, LONE, name="a\ud800")
            inbound = await sink.first()
            sent = await adapter.send(Outbound(inbound.chat_id, None, LONE))
            await adapter.edit(inbound.chat_id, None, sent.message_id, LONE + "!")
            [message] = fake.bot_messages(inbound.chat_id)
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
    assert_clean(inbound)
    assert inbound.text == REPAIRED and inbound.user_name == "a\ufffd"
    assert message.content == REPAIRED + "!"
    assert not any(has_surrogates(text) for text in message.edits)


async def test_terminal_bytes_that_are_not_utf8() -> None:
    read_fd, write_fd = os.pipe()
    # What `switchboard chat` gets on a UTF-8 terminal: strict decoding would end the reader.
    reader = open(read_fd, encoding="utf-8", errors="strict")  # noqa: SIM115 - closed below
    sink, ended = Sink(), asyncio.Event()
    screen = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, like a real terminal's stdout
    adapter = LocalAdapter(input=reader, output=screen, user="me", on_exit=ended.set)
    await adapter.start(sink)
    os.write(write_fd, b"caf\xe9 \xff\n")
    inbound = await sink.first()
    await adapter.send(Outbound("terminal", None, LONE))
    os.close(write_fd)
    await asyncio.wait_for(ended.wait(), 5)
    await adapter.stop()
    reader.close()
    assert_clean(inbound)
    assert inbound.text == "caf\ufffd \ufffd"
    screen.flush()
    assert "agent> " + REPAIRED in screen.buffer.getvalue().decode("utf-8")


async def test_webhook_deliveries() -> None:
    async with WebhookReceiver("s3cret-0123") as receiver:
        adapter = WebhookAdapter({"hook": ("s3cret-0123", receiver.url)})
        try:
            await adapter.send(Outbound("hook:c", None, LONE, idempotency_key="k"))
        finally:
            await adapter.stop()
    assert receiver.payloads[0]["text"] == REPAIRED
