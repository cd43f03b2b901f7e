"""A long answer into a Discord channel a moderator deleted: the real outbox and discord.py inside `DiscordAdapter`
against `FakeDiscord`, on a fake clock. Each part is refused (404 Unknown Channel) once, at once; the operator reads
one WARNING for the channel, not one per part (nor for the note of the first, refused too). Another channel of the
guild is answered as always."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.scenarios.test_discord_chat import SEND, in_channel

GUILD, CHANNEL, OTHER = 500, 600, 601
PARAGRAPHS = [f"paragraph {i} " + "x" * 1500 for i in range(5)]  # one part each
WAIT = 5.0

fake = fake_discord()


async def _ignore(_inbound: Inbound) -> None:
    return None


@pytest.fixture
async def outbox(fake, tmp_path) -> AsyncIterator[Outbox]:
    fake.add_channel(GUILD, CHANNEL)
    fake.add_channel(GUILD, OTHER)
    adapter = adapter_for(fake)
    await adapter.start(_ignore)
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"discord": adapter}, clock=clock)
    await outbox.start()
    try:
        yield outbox
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()


async def test_an_answer_into_a_deleted_channel_is_one_warning(fake, outbox, caplog):
    caplog.set_level(logging.INFO)
    fake.delete_channel(CHANNEL)
    keys = outbox.enqueue("discord", str(CHANNEL), None, "\n\n".join(PARAGRAPHS), kind="reply", key="t1:reply",
                          turn_id="t1")
    assert len(keys) == len(PARAGRAPHS)
    assert await outbox.flush(timeout=WAIT)
    sends = in_channel(fake, SEND, CHANNEL)
    assert [c.status for c in sends] == [404] * (len(PARAGRAPHS) + 1)  # each part once, and the note of the first
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"outbox: discord chat {CHANNEL}: {keys[0]} failed: NotFound: 404 (code 10003): Unknown Channel"]

    outbox.enqueue("discord", str(OTHER), None, "elsewhere", kind="reply", key="t2:reply", turn_id="t2")
    assert await outbox.flush(timeout=WAIT)
    assert [m.content for m in fake.bot_messages(OTHER)] == ["elsewhere"]
