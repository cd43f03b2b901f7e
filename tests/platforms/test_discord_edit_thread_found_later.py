"""A message in a thread Discord did not name in time (`DiscordAdapter._in_thread`) was handed over as the channel's
own, (thread, no thread); once the thread is known, its edit was keyed (parent, thread) alone and found nothing
there: the message, waiting for its turn, was answered as first written. Its edit is looked for under both keys, as
its deletion is (`discord_handover.by_either_key`). Real discord.py against the loopback `FakeDiscord`."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.test_discord_chat_lost import THREADED
from tests.platforms.test_discord_unheld_thread import NEW, key
from tests.platforms.thread_found_later import handed_over_before_and_after_the_thread_was_known

fake = fake_discord()


async def test_a_message_handed_over_before_its_thread_was_known_takes_its_edit(fake):
    waiting: dict[tuple[str, str | None, str], str] = {}  # the gateway's messages waiting for their turns
    told: list[tuple[str, str | None, str]] = []

    async def edited(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        told.append((chat_id, thread_id, message_id))
        if (chat_id, thread_id, message_id) in waiting:
            waiting[chat_id, thread_id, message_id] = text
            return True
        return False

    adapter = adapter_for(fake, thread_lookup_timeout=0.05)
    adapter.bind_edits(edited)
    try:
        async with losing(adapter) as (_, _, sink):
            handed, first, _ = await handed_over_before_and_after_the_thread_was_known(fake, sink)
            waiting.update({(*key(m), m.message_id): m.text for m in handed})
            fake.edit_message(NEW, first, f"<@{fake.bot_id}> first, corrected")
            await fake.wait_for(lambda: told)  # both keys are told in one step
    finally:
        await join_heartbeat_threads()
    assert told == [(str(THREADED), str(NEW), first), (str(NEW), None, first)]
    assert waiting[str(NEW), None, first] == "first, corrected"  # was "first": answered as first written
