"""A thread message held while the state database cannot say whether its thread was opened on an answer of the bot's
(`discord_opened.Unsure`, a storage failure):

- a member's edit of a message in such a thread was read as the message is, found "unsure", and dropped: it never
  reached the gateway, even once the store read again; it is held in its place among the events as its message is;
- the hold had no bound: every chat's events waited behind it for as long as the disk failed. Past
  `discord_opened.HOLD_SECONDS` the message is heard as in a thread of no answer's, said once as an ERROR, and the
  messages of threads not asked of yet hold nothing until the store reads again.

Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`, on a real store, the adapter's clock moved by
the test."""

from __future__ import annotations

import logging

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord_opened import HOLD_SECONDS, STORE_RETRY_SECONDS
from tests.discord_client import fake_discord
from tests.platforms import test_discord_thread_on_stored_answer as on_stored_answer
from tests.platforms.test_discord_thread_on_stored_answer import ALICE, BOB, CHANNEL, GUILD, heard, stored

fake = fake_discord()
clock, started = on_stored_answer.clock, on_stored_answer.started  # fixtures


async def test_an_edit_in_a_thread_the_store_cannot_say_of_waits_for_it(fake, started) -> None:
    adapter, sink, store, asked = started
    told: list[tuple[str, str | None, str, str]] = []

    async def edited(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        told.append((chat_id, thread_id, message_id, text))
        return True

    adapter.bind_edits(edited)
    answer = stored(store, "turn-1:0", fake.new_id())
    earlier = stored(store, "turn-2:0", fake.new_id())
    assert await heard(fake, sink, earlier, "tar?") == ["tar?"]  # as if before a restart
    [said_before] = [m.message_id for m in sink.inbound if m.text == "tar?"]
    adapter._answers._ids.clear()  # a new process: the thread on ``earlier`` not asked of yet
    count = len(sink.inbound)
    asked.broken = True
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
    await fake.wait_for(lambda: len(asked.ids) >= 3)  # held: asked again by the queue
    fake.edit_message(answer, said, "and zipped?")
    fake.edit_message(earlier, said_before, "tar.gz?")
    marker = int(fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True))
    await fake.wait_for(lambda: marker in [item[2] for item in adapter._queue._queue if isinstance(item, tuple)])
    asked.broken = False
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    # discord.py edits the message it holds in place: the one held is handed over as it reads by then.
    assert [m.message_id for m in sink.inbound[count:-1]] == [said]
    # Was []: both edits read as "unsure" and dropped.
    assert told == [(str(CHANNEL), answer, said, "and zipped?"), (str(CHANNEL), earlier, said_before, "tar.gz?")]


async def test_a_message_held_for_the_store_is_given_up_on_past_its_bound(fake, started, clock, caplog) -> None:
    # Every chat's events waited behind it for as long as the disk failed: the bot answered no one.
    adapter, sink, store, asked = started
    answer = stored(store, "turn-1:0", fake.new_id())
    later = stored(store, "turn-2:0", fake.new_id())
    caplog.set_level(logging.INFO, logger="platforms.discord")
    count = len(sink.inbound)
    asked.broken = True
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
    await fake.wait_for(lambda: len(asked.ids) >= 2)  # held: asked again by the queue
    clock.now += HOLD_SECONDS - 1
    await fake.wait_for(lambda: len(asked.ids) >= 3)  # asked again, still within the bound
    assert sink.inbound[count:] == []
    clock.now += 1
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    assert [m.text for m in sink.inbound[count:]] == ["marker"]  # heard as in a thread of no answer's
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert all(word in error.getMessage() for word in (f"message {said}", f"thread {answer}", "disk I/O error",
                                                       f"{HOLD_SECONDS:g} s", "passed over"))
    # The database still failing, a thread not asked of yet holds nothing (asked at most every 10 s).
    clock.now += STORE_RETRY_SECONDS
    assert await heard(fake, sink, later, "and zipped?") == []
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 2  # its WARNING, the ERROR
    asked.broken = False
    clock.now += STORE_RETRY_SECONDS
    assert await heard(fake, sink, answer, "thanks") == ["thanks"]
    assert "the state database says again whether threads were opened on answers of the bot's" in caplog.text
    asked.broken = True  # failing again: held again, with a bound of its own
    clock.now += STORE_RETRY_SECONDS
    count = len(sink.inbound)
    fake.push_guild_message(GUILD, CHANNEL, ALICE, "and zipped?", thread_id=later)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker 2", mention_bot=True)
    await fake.wait_for(lambda: adapter._queue.qsize() >= 1 and asked.ids.count(later) >= 3)
    assert sink.inbound[count:] == []
    asked.broken = False
    await fake.wait_for(lambda: any(m.text == "marker 2" for m in sink.inbound[count:]))
    assert [m.text for m in sink.inbound[count:]] == ["and zipped?", "marker 2"]
