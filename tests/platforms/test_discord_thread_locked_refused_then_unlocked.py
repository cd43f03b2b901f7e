"""A locked, archived thread's refusal (Discord's 403 50083) whose answer comes after Discord said the thread was
unlocked (its ``THREAD_UPDATE`` heard while the refused post was on its way back): the refusal made the thread known
locked, and its move fetched the thread, which read unlocked, and went on all the same. For `RECHECK_SECONDS` the
thread's new progress cards and notices, and a private thread's every answer, were refused without a call
(`discord_locked.unposted`), lost, though the thread takes them; a public thread's answers went to its channel. The
thread read unlocked is tried again, the refused answer first: a private thread's failed as Discord's 403, a public
one's went to the channel headed as from a locked thread. Real discord.py in `DiscordAdapter` against the loopback
`FakeDiscord`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.locked_thread import BOB, CHANNEL, GUILD, POST, THREAD, Clock

fake = fake_discord()
IN_THREAD = f"POST /channels/{THREAD}/messages"


@pytest.fixture(params=[False, True], ids=["public", "private"])
async def started(fake: FakeDiscord, request) -> AsyncIterator[tuple[DiscordAdapter, str, bool]]:
    private = request.param
    try:
        async with losing(adapter_for(fake, clock=Clock())) as (adapter, _, sink):
            if private:
                fake.push_guild_message(GUILD, CHANNEL, BOB, "my salary is…", thread_id=THREAD, private_thread=True)
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "bot, help", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            yield adapter, asked, private
    finally:
        await join_heartbeat_threads()


def part(key: str, text: str, kind: str = "reply", asked: str | None = None) -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text=text, kind=kind,  # type: ignore[arg-type]
                    idempotency_key=key, reply_to=asked)


async def test_a_thread_read_unlocked_after_its_refusal_is_tried_again(fake, started, monkeypatch):
    adapter, asked, private = started
    fake.lock_thread(THREAD)
    fake.archive_thread(THREAD)  # a moderator closes and locks it: discord.py holds it no more
    await fake.wait_for(lambda: adapter._client.get_channel(THREAD) is None)

    heard: list[int] = []
    updated = adapter._locked.updated
    monkeypatch.setattr(adapter._locked, "updated", lambda event: (heard.append(event.thread_id), updated(event)))
    release = fake.hold(IN_THREAD)
    fake.fail_next(IN_THREAD, 403, code=50083, message="Thread is archived")  # Discord refused it while locked
    sending = asyncio.create_task(adapter.send(part("turn-1/0", "first", asked=asked)))
    await fake.wait_for(lambda: fake.calls_to(POST))
    fake.lock_thread(THREAD, locked=False)  # unlocked meanwhile (still archived: a post reopens it)
    await fake.wait_for(lambda: heard)
    release.set()
    await sending  # tried there again: was Forbidden (private), in the channel under a "locked" head (public)

    await adapter.send(part("turn-2:card", "⏳ working", kind="notice"))  # was: refused, no call, for 10 minutes
    await adapter.send(part("turn-1/1", "second"))  # was: refused (private), in the channel (public)
    assert [m.content for m in fake.bot_messages(THREAD)] == ["first", "⏳ working", "second"]
    assert fake.bot_messages(CHANNEL) == []
    assert [c.status for c in fake.calls_to(POST)][-4:] == [403, 200, 200, 200]  # one refusal, no more
