"""A message in a thread Discord did not name in time (`DiscordAdapter._in_thread`) was handed over as the channel's
own, (thread, no thread); once the thread is known, its deletion is keyed (parent, thread), and found nothing there:
the message, waiting for its turn, was answered all the same. Its deletion is looked for under both keys. Real
discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.test_discord_unheld_thread import NEW, key
from tests.platforms.thread_found_later import handed_over_before_and_after_the_thread_was_known

fake = fake_discord()


async def test_a_message_handed_over_before_its_thread_was_known_is_dropped_by_its_deletion(fake):
    waiting: set[tuple[str, str | None, str]] = set()  # the gateway's messages waiting for their turns
    told: list[tuple[str, str | None, str]] = []

    async def deleted(platform: str, chat_id: str, thread_id: str | None, message_id: str) -> bool:
        told.append((chat_id, thread_id, message_id))
        if (chat_id, thread_id, message_id) in waiting:
            waiting.discard((chat_id, thread_id, message_id))
            return True
        return False

    adapter = adapter_for(fake, thread_lookup_timeout=0.05)
    adapter.bind_deletions(deleted)
    try:
        async with losing(adapter) as (_, _, sink):
            handed, first, second = await handed_over_before_and_after_the_thread_was_known(fake, sink)
            waiting.update((*key(m), m.message_id) for m in handed)
            fake.delete_message(NEW, first)
            fake.delete_message(NEW, second)
            await fake.wait_for(lambda: len({m for *_, m in told}) == 2)
    finally:
        await join_heartbeat_threads()
    assert waiting == set()  # both dropped, neither answered
    assert (str(NEW), None, first) in told
