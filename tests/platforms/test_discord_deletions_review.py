"""From review of the Discord deletions: a message a channel's read again after the catch-up's deadline found
(`platforms.discord_catch_up.reread`, live events flowing meanwhile) whose deletion was handed over before the
message itself is not handed over afterwards, to be answered."""

from __future__ import annotations

import asyncio

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Inbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord
from tests.platforms.test_discord_catch_up import HISTORY, USER, Sink, dm_seen_once

fake = fake_discord()


class GatedSink(Sink):
    """Holds the hand-over of the message saying ``gate`` until ``release`` is set."""

    def __init__(self, fake: FakeDiscord, gate: str) -> None:
        super().__init__(fake)
        self.gate, self.release, self.reached = gate, asyncio.Event(), asyncio.Event()

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text == self.gate:
            self.reached.set()
            await self.release.wait()
        await super().__call__(inbound)


async def test_a_message_read_again_whose_deletion_came_first_is_not_handed_over(fake: FakeDiscord) -> None:
    store, _ = await dm_seen_once(fake)
    dm = fake.dm_channel(USER)
    fake.push_dm(USER, "while down")
    pasted = fake.push_dm(USER, "my password is hunter2")
    sink, told = GatedSink(fake, "while down"), []

    async def deleted(platform: str, chat_id: str, thread_id: str | None, message_id: str) -> bool:
        told.append(message_id)
        return False  # nothing of it waits: the gateway has not got it yet

    history = fake.hold(HISTORY)
    adapter = adapter_for(fake, catch_up_timeout=0.2)
    adapter.bind_last_seen({c: str(m) for c, m in store.seen.items()}, store.record, lambda channel: None)
    adapter.bind_deletions(deleted)
    await adapter.start(sink)
    try:
        await fake.wait_for(lambda: adapter._caught_up.is_set())  # the deadline passed: read again, live flows
        history.set()
        await sink.reached.wait()  # the read again hands "while down" over; the pasted one is next
        fake.delete_message(dm, pasted)
        await fake.wait_for(lambda: pasted in told)
        sink.release.set()
        await sink.has(fake.push_dm(USER, "live"))
        await asyncio.sleep(0.2)
    finally:
        await adapter.stop()
    assert [e.text for e in sink.events][-2:] == ["while down", "live"]  # the pasted one never handed over
    assert store.seen[str(dm)] >= int(pasted)  # yet seen: the next start's catch-up does not look for it
