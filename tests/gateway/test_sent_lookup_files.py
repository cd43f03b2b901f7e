"""A file send whose earlier attempt may have reached the platform unseen is looked up before it is sent
again, as a text part is (`gateway.sent_lookup`): on Discord, by its nonce among the posts this process heard,
once Discord's own check of the nonce ("the past few minutes") no longer drops the repeat. The real
discord.py client and the real outbox against the loopback FakeDiscord."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.testing import FakeClock
from agent.tools.send_file import FileToSend
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.discord import DiscordAdapter
from platforms.fakes._discord_rest import NONCE_SECONDS
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.gateway.observing import Lookups

SEND = "POST /channels/{channel_id}/messages"
KEY = "t1:file:0:0"
WAIT = 5.0


def later_after_the_first_post(fake: FakeDiscord, channel: str) -> None:
    """From the bot's first post in ``channel`` on, the fake's clock reads past Discord's check of a nonce:
    whenever the outbox tries again, Discord no longer drops the repeat (an outage outlasted those minutes)."""
    fake.clock = lambda: time.monotonic() + (NONCE_SECONDS + 1 if fake.bot_messages(channel) else 0.0)


@pytest.fixture
async def discord() -> AsyncIterator[tuple[FakeDiscord, DiscordAdapter]]:
    async with FakeDiscord() as fake:
        adapter = adapter_for(fake)
        await adapter.start(_ignore)
        yield fake, adapter
        await adapter.stop()
        await join_heartbeat_threads()
        assert fake.errors == []


async def _ignore(_inbound) -> None:
    return None


def outbox_for(tmp_path: Path, adapter: DiscordAdapter, lookups: Lookups, **kw) -> tuple[Outbox, GatewayStore,
                                                                                         OutboxFiles]:
    clock = FakeClock()  # the backoff passes at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    files = OutboxFiles(tmp_path / "outbox-files")
    return Outbox(store.outbox, {"discord": adapter}, clock=clock, files=files, events=lookups.events, **kw), store, \
        files


def keep(files: OutboxFiles, tmp_path: Path) -> None:
    source = tmp_path / "q3.csv"
    source.write_text("region,total\n")
    files.keep(KEY, FileToSend(source, "q3.csv", None), 10_000_000, "discord")


async def test_a_file_whose_answer_was_lost_is_found_and_not_posted_again_past_the_nonces_minutes(
        tmp_path: Path, discord) -> None:
    fake, adapter = discord
    lookups = Lookups()
    outbox, store, files = outbox_for(tmp_path, adapter, lookups)
    await outbox.start()
    keep(files, tmp_path)
    dm = fake.dm_channel(42)
    later_after_the_first_post(fake, dm)
    fake.fail_next(SEND, drop=True, after=True)  # posted; the connection closes before the answer
    outbox.enqueue_file("discord", dm, None, "the numbers", key=KEY)
    message_id = await outbox.wait_sent(KEY, timeout=WAIT)
    await outbox.close()
    store.close()
    [posted] = fake.bot_messages(dm)
    assert posted.id == message_id and len(posted.attachments) == 1
    assert lookups.outcomes == ["discord:found"] and files.get(KEY) is None


async def test_a_file_given_up_on_with_its_answer_lost_is_looked_up_before_the_operators_retry_posts_it(
        tmp_path: Path, discord) -> None:
    fake, adapter = discord
    lookups = Lookups()
    outbox, store, files = outbox_for(tmp_path, adapter, lookups, give_up_after={"discord": 0.0})
    await outbox.start()
    keep(files, tmp_path)
    dm = fake.dm_channel(42)
    later_after_the_first_post(fake, dm)
    fake.fail_next(SEND, drop=True, after=True)
    outbox.enqueue_file("discord", dm, None, "the numbers", key=KEY)
    assert await outbox.wait_sent(KEY, timeout=WAIT) is None  # given up on at once, its answer lost
    assert outbox.retry(store.outbox.message(KEY).id)
    message_id = await outbox.wait_sent(KEY, timeout=WAIT)
    await outbox.close()
    store.close()
    [posted] = [m for m in fake.bot_messages(dm) if m.attachments]  # and the note of the file given up on
    assert posted.id == message_id and lookups.outcomes == ["discord:found"]
