"""Review of the bound on a message held for the store (`discord_opened.HOLD_SECONDS`) and of a member's edit held
with it (`discord_opened.Unsure.edit`):

- once a hold was given up on, every message queued behind it in a thread not asked of yet read the store again
  at its turn, one sync read each on the event loop (each waiting 5 s on a lock), rather than at most every
  `STORE_RETRY_SECONDS`: a busy thread's hundred messages blocked the loop for minutes after the hold's end;
- discord.py changes the message it caches in place at each edit: a message held was read at its turn as last
  edited, then its earlier edit was handed over after it, taking the gateway's waiting message back to an older text
  (its later edit then forward again: a turn beginning between them answered the older). Each edit held is read as
  the latest of that message's held.

Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`, on a real store, the adapter's clock moved by
the test."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord_opened import HOLD_SECONDS
from tests.discord_client import fake_discord
from tests.platforms import test_discord_thread_on_stored_answer as on_stored_answer
from tests.platforms.test_discord_thread_on_stored_answer import ALICE, BOB, CHANNEL, GUILD, stored

fake = fake_discord()
clock, started = on_stored_answer.clock, on_stored_answer.started  # fixtures


async def test_messages_queued_behind_a_hold_given_up_on_do_not_each_read_the_store(fake, started, clock) -> None:
    adapter, sink, store, asked = started
    answer = stored(store, "turn-1:0", fake.new_id())
    count = len(sink.inbound)
    asked.broken = True
    fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
    await fake.wait_for(lambda: len(asked.ids) >= 2)  # held: asked again by the queue
    for n in range(5):  # held behind it, asking nothing (within 10 s of the failure)
        fake.push_guild_message(GUILD, CHANNEL, ALICE, f"more {n}", thread_id=answer)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
    await fake.wait_for(lambda: adapter._queue.qsize() >= 6)
    before = len(asked.ids)
    clock.now += HOLD_SECONDS
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    assert [m.text for m in sink.inbound[count:]] == ["marker"]
    # The read that ended the hold; was 6: one more by each message queued behind it.
    assert len(asked.ids) - before == 1


@pytest.mark.parametrize("cached", [True, False])
async def test_a_held_edit_does_not_take_its_message_back_to_an_older_text(fake, started, cached) -> None:
    adapter, sink, store, asked = started
    told: list[str] = []

    async def edited(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        told.append(text)
        return True

    adapter.bind_edits(edited)
    answer = stored(store, "turn-1:0", fake.new_id())
    count = len(sink.inbound)
    asked.broken = True
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "v1", thread_id=answer)
    await fake.wait_for(lambda: len(asked.ids) >= 2)
    if not cached:  # out of discord.py's cache (a busy bot's 1000 messages since): not changed in place
        adapter._client._connection._messages.clear()
    fake.edit_message(answer, said, "v2")
    fake.edit_message(answer, said, "v3")
    marker = int(fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True))
    await fake.wait_for(lambda: marker in [item[2] for item in adapter._queue._queue if isinstance(item, tuple)])
    asked.broken = False
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    [message] = sink.inbound[count:-1]
    seen = [message.text, *told]
    # Was ["v3", "v2", "v3"] cached: the message, read as last edited, taken back to the older text, forward again.
    assert seen == sorted(seen) and seen[-1] == "v3" and len(told) == 2, seen
    assert not getattr(adapter, "_held_edits", None)  # each held edit handed over: none kept
