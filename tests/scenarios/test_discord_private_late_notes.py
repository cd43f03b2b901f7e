"""A Discord refusal for its user alone that goes out late keeps its "Delivered late" note to that user too.

The note is a message of its own the outbox journals ahead of a late part (`gateway.part_notes.late_note`). It
went without the part's interaction token, so it was posted in the channel: everyone there read that something
late followed, and nothing did (the refusal is ephemeral); past the token's 15 minutes the note stood alone in
the channel while the refusal was not sent at all. The real discord.py client, outbox and state file, against
the fake; the gateway down for a while between journaling the refusal and sending it."""

from __future__ import annotations

import time
from pathlib import Path

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import SYSTEM_CLOCK
from gateway.late_notes import SUFFIX, note_text
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import CommandSpec, Inbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.scenarios.test_discord_refused_privately_restart import (
    CHANNEL,
    REFUSED,
    WAIT,
    refused,
    running,
    seen_by_all,
    told_alone,
)

LATE_AFTER = 600.0  # delivery.late_after's default
fake = fake_discord()


class Later:
    """The system clock, ``ahead`` seconds on: the next process starts that long after the first died."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def time(self) -> float:
        return time.time() + self.ahead

    def monotonic(self) -> float:
        return SYSTEM_CLOCK.monotonic()

    async def sleep(self, seconds: float) -> None:
        await SYSTEM_CLOCK.sleep(seconds)


async def _restart_late(fake: FakeDiscord, path: Path, ahead: float) -> tuple[Outbox, GatewayStore, DiscordAdapter]:
    """The next process, ``ahead`` seconds after the first journaled the refusal: its outbox notes late parts."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    store = GatewayStore(path, clock=Later(ahead))
    outbox = Outbox(store.outbox, {"discord": adapter}, clock=Later(ahead), late_after=LATE_AFTER)
    await outbox.start()
    return outbox, store, adapter


async def _stop(outbox: Outbox, store: GatewayStore, adapter: DiscordAdapter) -> None:
    await outbox.close()
    store.close()
    await adapter.stop()
    await join_heartbeat_threads()


async def test_a_late_refusals_note_goes_to_its_user_alone(fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with running(fake, path, start=False) as (outbox, adapter, got):  # gone before it sent it
        interaction = await refused(fake, outbox, adapter, got)
    outbox, store, adapter = await _restart_late(fake, path, 11 * 60)  # down 11 minutes: the token still lives
    try:
        await outbox.wait_sent("refused:0", timeout=WAIT)
    finally:
        await _stop(outbox, store, adapter)
    assert told_alone(fake, interaction) == [note_text(11 * 60), REFUSED]
    assert [m.content for m in fake.bot_messages(CHANNEL) if not m.flags & 64] == []  # nothing the channel sees


async def test_a_refusal_past_its_tokens_15_minutes_leaves_no_late_note_in_the_channel(
        fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with running(fake, path, start=False) as (outbox, adapter, got):
        interaction = await refused(fake, outbox, adapter, got)
    fake.clock = lambda: time.monotonic() + 16 * 60  # the token expired while the gateway was down
    outbox, store, adapter = await _restart_late(fake, path, 16 * 60)
    try:
        assert await outbox.wait_sent("refused:0", timeout=WAIT) is None  # failed, as without a note
        assert store.outbox.message("refused:0" + SUFFIX).status == "failed"
    finally:
        await _stop(outbox, store, adapter)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == [""] and told_alone(fake, interaction) == []
    assert [m.content for m in seen_by_all(fake, interaction)] == [""]  # "thinking…", which Discord shows failed
