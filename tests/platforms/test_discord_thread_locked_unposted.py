"""A thread known locked (`discord_locked.LockedThreads`) takes no post that goes nowhere else: a new progress card
(a notice, never moved to the channel) and, once one was refused there, every answer of a private thread (whose
channel may not read it) were each tried in the thread and refused, one more call toward Discord's 10,000 invalid
requests that bar the bot. Now refused without a call (`discord_locked.unposted`), final, until the thread is tried
again (`RECHECK_SECONDS`). Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.discord_locked import RECHECK_SECONDS
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import losing
from tests.platforms.locked_thread import BOB, CHANNEL, GUILD, POST, THREAD, Clock

fake = fake_discord()
UNPOSTED = f"thread {THREAD} is locked: the bot's message is not posted there"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=[False, True], ids=["public", "private"])
async def started(fake: FakeDiscord, clock: Clock, request) -> AsyncIterator[tuple[DiscordAdapter, str, bool]]:
    """An adapter that has heard Bob ask in ``THREAD`` (a private one, or not); his question's id; whether private."""
    private = request.param
    try:
        async with losing(adapter_for(fake, clock=clock)) as (adapter, _, sink):
            if private:  # made by Bob, the bot added by his mention
                fake.push_guild_message(GUILD, CHANNEL, BOB, "my salary is…", thread_id=THREAD, private_thread=True)
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "bot, help", mention_bot=True, thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            yield adapter, asked, private
    finally:
        await join_heartbeat_threads()


def part(key: str, text: str, kind: str = "reply", asked: str | None = None) -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text=text, kind=kind,  # type: ignore[arg-type]
                    idempotency_key=key, reply_to=asked)


def thread_posts(fake: FakeDiscord) -> list[int]:
    """The statuses of the bot's posts in ``THREAD``."""
    return [c.status for c in fake.calls_to(POST) if c.path == f"/channels/{THREAD}/messages"]


async def test_a_known_locked_thread_takes_no_new_card_and_a_private_ones_answers_no_call(fake, started, clock,
                                                                                          tmp_path: Path):
    adapter, asked, private = started
    fake.lock_thread(THREAD)
    await fake.wait_for(lambda: getattr(adapter._client.get_channel(THREAD), "locked", None) is True)
    first = part("turn-1/0", "your salary is low", asked=asked)
    if private:
        with pytest.raises(Forbidden, match="50083"):  # Discord's refusal: never shown to the channel
            await adapter.send(first)
    else:
        await adapter.send(first)  # moved to the channel
    assert thread_posts(fake) == [403]

    path = tmp_path / "report.txt"
    path.write_bytes(b"numbers")
    with pytest.raises(Forbidden, match=UNPOSTED):  # a new turn's card, or a background task's
        await adapter.send(part("turn-2:card", "⏳ working", kind="notice"))
    later = [part("turn-1/1", "the rest"), part("turn-2/0", "from the background", kind="completion")]
    for message in later:
        if private:
            with pytest.raises(Forbidden, match=UNPOSTED):
                await adapter.send(message)
        else:
            await adapter.send(message)
    if private:
        with pytest.raises(Forbidden, match=UNPOSTED):
            await adapter.send_file(part("turn-1/2", "the report", kind="interim"),
                                    OutboundFile(str(path), "report.txt", 7))
    assert thread_posts(fake) == [403]  # was [403] * 5 (private), [403, 403] (public: the card)
    assert len(fake.bot_messages(CHANNEL)) == (0 if private else 3)

    clock.now += RECHECK_SECONDS  # tried again: refused, known locked again
    with pytest.raises(Forbidden, match="50083"):
        await adapter.send(part("turn-3:card", "⏳ working", kind="notice"))
    assert thread_posts(fake) == [403, 403]
