"""A forwarded message of display components (Discord's Components V2, `platforms.discord_inbound.components_text`):
a bot's message holds its words in text displays, with no content or embeds, and the user who forwards one to the
bot waits for an answer. The real discord.py client against the loopback fake."""

from __future__ import annotations

import logging

import pytest

from platforms.base import Inbound
from platforms.fakes.discord import FakeDiscord, Upload
from tests.discord_client import adapter_for, join_heartbeat_threads

GUILD, CHANNEL, THREAD, USER = 500, 600, 701, 42

CARD = [{"type": 17, "accent_color": 0xE74C3C, "components": [
    {"type": 10, "content": "## Build #42 failed"},
    {"type": 9, "components": [{"type": 10, "content": "2 tests failed on `main`."}],
     "accessory": {"type": 11, "media": {"url": "https://cdn.example/avatar.png"}, "description": "ci-bot"}},
    {"type": 14, "divider": True, "spacing": 1},
    {"type": 12, "items": [{"media": {"url": "https://cdn.example/graph.png"}, "description": "failure graph"},
                           {"media": {"url": "https://cdn.example/log.png"}}]},
]}, {"type": 1, "components": [{"type": 2, "style": 5, "label": "Open run", "url": "https://ci.example/42"}]}]


class Sink:
    def __init__(self) -> None:
        self.events: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.events.append(inbound)


async def test_a_forwarded_card_of_display_components_reaches_the_model_as_its_words(
        caplog: pytest.LogCaptureFixture) -> None:
    """It was passed over (components only, at DEBUG): the user who forwarded it heard nothing."""
    caplog.set_level(logging.DEBUG, logger="platforms.discord")
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_dm(USER, "", forwarded=True, components=CARD)
            buttons = fake.push_dm(USER, "", forwarded=True, components=CARD[1:])
            fake.push_dm(USER, "the last one")
            await fake.wait_for(lambda: any(e.text == "the last one" for e in sink.events))
            assert [e.text for e in sink.events] == [
                "## Build #42 failed\n2 tests failed on `main`.\n(a picture: ci-bot, which the bot cannot see)\n"
                "(a picture: failure graph, which the bot cannot see)\n(a picture, which the bot cannot see)",
                "the last one"]
            assert sink.events[0].forwarded and not sink.events[0].is_command
            passed_over = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
            assert f"discord: message {buttons} holds components only: not answered" in passed_over  # no words
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []


async def test_the_words_of_a_forwarded_card_come_with_its_file() -> None:
    """Its file is among the message's attachments, which the model gets: the words were dropped with them."""
    async with FakeDiscord() as fake:
        adapter, sink = adapter_for(fake), Sink()
        await adapter.start(sink)
        try:
            fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD,
                                    thread_owner=fake.bot_id)
            fake.push_guild_message(GUILD, CHANNEL, USER, "", thread_id=THREAD, forwarded=True,
                                    files=[Upload("report.txt", b"2 failed", "text/plain")],
                                    components=[{"type": 10, "content": "Nightly report <@%s>" % fake.bot_id},
                                                {"type": 13, "file": {"url": "attachment://report.txt"}}])
            await fake.wait_for(lambda: len(sink.events) == 2)
            forward = sink.events[1]
            assert forward.text == "Nightly report @switchboard"
            assert [a.name for a in forward.attachments] == ["report.txt"]
        finally:
            await adapter.stop()
            await join_heartbeat_threads()
        assert fake.errors == []
