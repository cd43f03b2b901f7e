"""Discord across a restart that comes later than Discord checks a nonce for: the posts the last
process had in flight when it died are looked for (`platforms.discord_sent`) before they are sent
again, and each chat gets its answer once. The real outbox and `DiscordAdapter`, the loopback fake."""

from __future__ import annotations

from pathlib import Path

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound
from platforms.discord_sent import LOOKUP_INTERVAL
from platforms.fakes._discord_rest import NONCE_SECONDS
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads

SEND = "POST /channels/{channel_id}/messages"
HISTORY = "GET /channels/{channel_id}/messages"
WAIT = 5.0
SLACK = 0.05
"""Of the lookups' spacing: the first read's own round trip may have taken that much longer."""


async def _ignore(_inbound: Inbound) -> None:
    return None


async def test_posts_in_flight_when_the_process_died_are_found_after_a_restart_past_the_nonce_window(
        tmp_path: Path) -> None:
    now = 0.0
    async with FakeDiscord(clock=lambda: now) as fake:
        chats = [fake.dm_channel(user) for user in (42, 43)]
        store = GatewayStore(tmp_path / "state.db")
        adapter = adapter_for(fake)
        await adapter.start(_ignore)
        outbox = Outbox(store.outbox, {"discord": adapter})
        await outbox.start()
        posting = fake.hold(SEND)
        for n, chat in enumerate(chats):
            outbox.enqueue("discord", chat, None, f"the answer to {n}", kind="reply", key=f"t{n}")
        await fake.wait_for(lambda: len(fake.calls_to(SEND)) == len(chats))
        await outbox.close()  # the process dies, both posts on their way
        await adapter.stop()
        store.close()
        posting.set()  # Discord posts them all the same
        await fake.wait_for(lambda: all(fake.bot_messages(chat) for chat in chats))

        now += NONCE_SECONDS  # the gateway is back later than Discord drops a repeated nonce
        store = GatewayStore(tmp_path / "state.db")
        adapter = adapter_for(fake)
        await adapter.start(_ignore)
        outbox = Outbox(store.outbox, {"discord": adapter})
        await outbox.start()
        try:
            sent = [await outbox.wait_sent(f"t{n}:0", timeout=WAIT) for n in range(len(chats))]
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()
            await join_heartbeat_threads()
        assert [[m.id for m in fake.bot_messages(chat)] for chat in chats] == [[message_id] for message_id in sent]
        assert len(fake.calls_to(SEND)) == len(chats)
        # Both chats looked at once: Discord was asked a fifth of a second apart, not all at once.
        first, second = fake.calls_to(HISTORY)
        assert second.at - first.at >= LOOKUP_INTERVAL - SLACK
    assert fake.errors == []
