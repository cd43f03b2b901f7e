"""Threads on the bot's answers and locked threads, where the adapter learns late what it needs to know:

- a thread opened on an answer whose post is still waiting for Discord's answer (the message made, its
  ``MESSAGE_CREATE`` heard): its messages were heard as any thread's, passed over, though the thread is the bot's;
- a message held while the state database cannot say whether its thread is on an answer is left, at a stop, for the
  next start's catch-up (the thread's last message seen put before it), not lost;
- a thread whose lock crossed the bot's post: Discord refused it as locked while the thread's unlock was on its way;
  the answer is tried there once more, but only when Discord said it unlocked meanwhile (no call known refused).

Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, Outbound
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.platforms import test_discord_thread_on_stored_answer as on_stored_answer
from tests.platforms.chat_lost import losing
from tests.platforms.locked_thread import Clock
from tests.platforms.sink import Sink
from tests.platforms.test_discord_thread_on_stored_answer import ALICE, BOB, CHANNEL, GUILD, heard, stored

clock, started = on_stored_answer.clock, on_stored_answer.started  # fixtures

THREAD = 800
IN_THREAD = f"POST /channels/{THREAD}/messages"


def posts_in_thread(fake: FakeDiscord) -> list[int]:
    """The statuses of the bot's posts in ``THREAD`` so far (0: not answered yet)."""
    return [c.status for c in fake.calls_to("POST /channels/{channel_id}/messages")
            if c.path == f"/channels/{THREAD}/messages"]


class SlowAnswers(FakeDiscord):
    """Discord whose answer to a post waits, once the post is made (its ``MESSAGE_CREATE`` sent), while
    ``answering`` is unset."""

    answering: asyncio.Event | None = None

    async def _create_message(self, request: web.Request) -> web.Response:
        response = await super()._create_message(request)
        if self.answering is not None:
            await self.answering.wait()
        return response


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with SlowAnswers() as fake:
        yield fake
    assert fake.errors == []


async def test_a_thread_opened_on_an_answer_whose_post_awaits_its_answer_is_the_bots(fake: SlowAnswers) -> None:
    sink = Sink()
    adapter = adapter_for(fake)
    await adapter.start(sink)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True)
        await fake.wait_for(lambda: sink.inbound)
        for text, kind, key, said, expected in (("about 3 MB", "reply", "turn-1:0", "and compressed?", True),
                                                ("/usage: 3 turns", "command", "cmd-1:0", "why?", False)):
            fake.answering = asyncio.Event()
            part = Outbound(chat_id=str(CHANNEL), thread_id=None, text=text, kind=kind,  # type: ignore[arg-type]
                            idempotency_key=key)
            sending = asyncio.ensure_future(adapter.send(part))
            [posted] = await fake.wait_for(lambda: [m for m in fake.bot_messages(CHANNEL) if m.content == text])
            await fake.wait_for(lambda: adapter._posted.get(posted.nonce))  # its MESSAGE_CREATE came
            assert not sending.done()
            # Was [] for the answer: passed over, lost. A command's answer needs a mention.
            assert await heard(fake, sink, posted.id, said) == ([said] if expected else [])
            fake.answering.set()
            assert (await sending).message_id == posted.id
            assert await heard(fake, sink, posted.id, "thanks") == (["thanks"] if expected else [])
        assert [m.text for m in sink.inbound].count("and compressed?") == 1
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_a_message_held_for_the_store_at_a_stop_is_left_for_the_next_start(fake, started) -> None:
    adapter, sink, store, asked = started
    answer = stored(store, "turn-1:0", fake.new_id())
    asked.broken = True
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "and compressed?", thread_id=answer)
    await fake.wait_for(lambda: len(asked.ids) >= 2)  # held: asked again by the queue
    await adapter.stop()
    assert [m.text for m in sink.inbound] == ["how big is it?"]
    assert adapter._last_seen.last_seen[int(answer)] == int(said) - 1  # the next start's catch-up reads it


@pytest.fixture(params=[False, True], ids=["public", "private"])
async def asked_in_thread(fake: FakeDiscord, request) -> AsyncIterator[tuple[platforms.discord.DiscordAdapter, str]]:
    try:
        async with losing(adapter_for(fake, clock=Clock())) as (adapter, _, sink):
            if request.param:
                fake.push_guild_message(GUILD, CHANNEL, BOB, "my salary is…", thread_id=THREAD, private_thread=True)
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "bot, help", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            yield adapter, asked
    finally:
        await join_heartbeat_threads()


def part(asked: str) -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text="about 3 MB", kind="reply",
                    idempotency_key="turn-1:0", reply_to=asked)


async def test_an_answer_refused_as_its_thread_unlocked_is_posted_there(fake, asked_in_thread) -> None:
    # discord.py holds the thread (not archived): its copy read unlocked, the answer failed (private) or went to the
    # channel under a head saying the thread is locked (public).
    adapter, asked = asked_in_thread
    fake.lock_thread(THREAD)
    await fake.wait_for(lambda: adapter._client.get_channel(THREAD).locked)
    release = fake.hold(IN_THREAD)
    fake.fail_next(IN_THREAD, 403, code=50083, message="Thread is archived")  # Discord refused it while locked
    sending = asyncio.ensure_future(adapter.send(part(asked)))
    await fake.wait_for(lambda: posts_in_thread(fake))
    fake.lock_thread(THREAD, locked=False)
    await fake.wait_for(lambda: not adapter._client.get_channel(THREAD).locked)
    release.set()
    assert (await sending).message_id == fake.bot_messages(THREAD)[-1].id
    assert posts_in_thread(fake) == [403, 200]
    assert fake.bot_messages(CHANNEL) == []


async def test_a_refusal_whose_unlock_was_not_heard_is_not_tried_again(fake, asked_in_thread) -> None:
    # discord.py's copy reads unlocked, as it has not heard the lock yet: tried again, it is one more refusal.
    adapter, asked = asked_in_thread
    private = adapter._client.get_channel(THREAD).is_private()
    fake.fail_next(IN_THREAD, 403, code=50083, message="Thread is archived")
    if private:
        with pytest.raises(Forbidden, match="50083"):
            await adapter.send(part(asked))
    else:
        await adapter.send(part(asked))  # to the channel, as documented
        assert len(fake.bot_messages(CHANNEL)) == 1
    assert posts_in_thread(fake) == [403]


async def test_a_thread_relocked_before_the_refusal_came_back_is_not_tried_again(fake, asked_in_thread) -> None:
    # Unlocked, then locked again, while the refused post was on its way: Discord's last word is "locked", and the
    # post tried there again was one more refusal (two 403s toward the invalid-request ban).
    adapter, asked = asked_in_thread
    thread = adapter._client.get_channel(THREAD)
    private = thread.is_private()
    fake.lock_thread(THREAD)
    await fake.wait_for(lambda: thread.locked)
    release = fake.hold(IN_THREAD)
    sending = asyncio.ensure_future(adapter.send(part(asked)))
    await fake.wait_for(lambda: posts_in_thread(fake))
    fake.lock_thread(THREAD, locked=False)
    await fake.wait_for(lambda: not thread.locked)
    fake.lock_thread(THREAD)
    await fake.wait_for(lambda: thread.locked)
    release.set()
    if private:
        with pytest.raises(Forbidden, match="50083"):
            await sending
    else:
        await sending  # to the channel, as documented
        assert len(fake.bot_messages(CHANNEL)) == 1
    assert posts_in_thread(fake) == [403]


class Corrupt:
    """A store whose lookup fails for good, and not for want of storage (`platforms.not_recorded.storage_refusal`):
    its file corrupt."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def __call__(self, message_id: str) -> bool:
        self.ids.append(message_id)
        exc = sqlite3.DatabaseError("database disk image is malformed")
        exc.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
        raise exc


async def test_a_store_failing_otherwise_than_for_storage_holds_no_chat(fake, started, caplog) -> None:
    # Held, the thread's message was asked again and again for good, and every chat's events waited behind it: the
    # bot answered no one, the log said one WARNING. As `discord_handover.until_recorded` drops an event whose
    # failure is its own, the message is heard as in a thread of no answer's (as before the hold).
    adapter, sink, store, _ = started
    corrupt = Corrupt()
    adapter.bind_answers(corrupt)
    answer = stored(store, "turn-1:0", fake.new_id())
    caplog.set_level(logging.INFO, logger="platforms.discord")
    assert await asyncio.wait_for(heard(fake, sink, answer, "and compressed?"), 5) == []
    assert await asyncio.wait_for(heard(fake, sink, answer, "and zipped?"), 5) == []
    assert corrupt.ids == [answer]  # not asked again within `STORE_RETRY_SECONDS`
    [warned] = [r for r in caplog.records if "could not read the state database" in r.getMessage()]
    assert warned.levelno == logging.WARNING and "heard as any" in warned.getMessage()
