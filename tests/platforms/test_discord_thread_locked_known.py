"""A thread that refused an answer as locked is known locked (`discord_locked.LockedThreads`): the rest of the answer
goes to the thread's channel without a refused call each (Discord counts them toward barring the bot), until Discord
says the thread unlocked or `RECHECK_SECONDS` pass. And only answers posted where a thread can
be opened on them (a server's channel: no DM, no thread) are remembered as the bot's answers. Real discord.py in
`DiscordAdapter` against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, NotFound, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.discord_locked import RECHECK_SECONDS
from platforms.discord_membership import THREAD_DELETED
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord
from tests.platforms.chat_lost import Lost
from tests.platforms.locked_thread import BOB, CHANNEL, POST, THREAD, Clock, asked_in_thread

fake = fake_discord()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def started(fake: FakeDiscord, clock: Clock) -> AsyncIterator[tuple[DiscordAdapter, str, Lost]]:
    async with asked_in_thread(fake, clock) as started:
        yield started


def part(asked: str | None, key: str, text: str = "about 3 MB", kind: str = "reply") -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text=text, kind=kind,  # type: ignore[arg-type]
                    idempotency_key=key, reply_to=asked)


def thread_posts(fake: FakeDiscord) -> list[int]:
    """The statuses of the bot's posts in ``THREAD``."""
    return [c.status for c in fake.calls_to(POST) if c.path == f"/channels/{THREAD}/messages"]


async def held_locked(fake: FakeDiscord, adapter: DiscordAdapter, locked: bool = True) -> None:
    """Until discord.py's copy of ``THREAD`` says it is (un)locked, as Discord announced it."""
    client = adapter._client
    assert client is not None
    await fake.wait_for(lambda: getattr(client.get_channel(THREAD), "locked", None) is locked)


async def lock(fake: FakeDiscord, adapter: DiscordAdapter) -> None:
    fake.lock_thread(THREAD)
    await held_locked(fake, adapter)


async def test_a_locked_threads_answer_makes_one_refused_call_not_one_a_part(fake, started, tmp_path: Path):
    adapter, asked, _ = started
    await lock(fake, adapter)
    path = tmp_path / "report.txt"
    path.write_bytes(b"numbers")

    await adapter.send(part(asked, "turn-1/0", "first"))
    await adapter.send(part(asked, "turn-1/1", "the agent's word", kind="interim"))
    await adapter.send_file(part(asked, "turn-1/2", "the report", kind="interim"),
                            OutboundFile(str(path), "report.txt", 7))
    await adapter.send(part(None, "turn-1/3", "second"))
    await adapter.send(part(None, "turn-2/0", "from the background", kind="completion"))

    assert thread_posts(fake) == [403]  # was [403] * 5
    moved = fake.bot_messages(CHANNEL)
    assert [m.content.split("\n", 1)[1] for m in moved] == [
        "first", "the agent's word", "the report", "second", "from the background"]
    assert moved[0].content.startswith(f"**↪ For <@{BOB}>, from <#{THREAD}>**")
    assert moved[2].attachments[0]["filename"] == "report.txt"
    assert fake.bot_messages(THREAD) == []


async def test_a_notice_is_not_tried_and_a_post_taken_there_after_a_while_unlocks_it(fake, started, clock: Clock):
    adapter, asked, _ = started
    await lock(fake, adapter)
    await adapter.send(part(asked, "turn-1/0", "first"))
    fake.manage_threads(CHANNEL)  # the bot may post in the locked thread now
    with pytest.raises(Forbidden, match=f"thread {THREAD} is locked"):  # never moved: refused without a call
        await adapter.send(part(None, "n-1", "still working", kind="notice"))
    clock.now += RECHECK_SECONDS
    await adapter.send(part(None, "turn-1/1", "second"))  # the thread takes a post: answers go there again
    await adapter.send(part(None, "turn-1/2", "third"))
    assert [m.content for m in fake.bot_messages(THREAD)] == ["second", "third"]
    assert thread_posts(fake) == [403, 200, 200]


async def test_unlocked_by_discord_the_thread_takes_its_answers_again(fake, started):
    adapter, asked, _ = started
    await lock(fake, adapter)
    await adapter.send(part(asked, "turn-1/0", "first"))
    fake.lock_thread(THREAD, locked=False)
    await held_locked(fake, adapter, locked=False)  # discord.py's copy says so, perhaps before the raw event
    await adapter.send(part(None, "turn-1/1", "second"))
    assert [m.content for m in fake.bot_messages(THREAD)] == ["second"]
    assert thread_posts(fake) == [403, 200]


async def test_an_archived_thread_unlocked_takes_its_answers_again(fake, started):
    """discord.py holds no archived thread: only the raw ``THREAD_UPDATE`` says it unlocked."""
    adapter, asked, _ = started
    await lock(fake, adapter)
    fake.archive_thread(THREAD)
    await fake.wait_for(lambda: adapter._client.get_channel(THREAD) is None)
    await adapter.send(part(asked, "turn-1/0", "first"))
    await adapter.send(part(None, "turn-1/1", "second"))
    assert thread_posts(fake) == [403]

    fake.lock_thread(THREAD, locked=False)  # still archived: a post reopens it
    later = part(None, "turn-2/0", "third")
    await fake.wait_for(lambda: not adapter._locked.at_once(later, adapter._client))
    await adapter.send(later)
    assert [m.content for m in fake.bot_messages(THREAD)] == ["third"]
    assert thread_posts(fake) == [403, 200]


async def test_the_thread_is_tried_again_after_a_while(fake, started, clock: Clock):
    """Its unlock missed (the gateway down then), the thread is not left for good."""
    adapter, asked, _ = started
    await lock(fake, adapter)
    await adapter.send(part(asked, "turn-1/0", "first"))
    clock.now += RECHECK_SECONDS - 1
    await adapter.send(part(None, "turn-1/1", "second"))
    assert thread_posts(fake) == [403]
    clock.now += 1
    await adapter.send(part(None, "turn-1/2", "third"))
    assert thread_posts(fake) == [403, 403]  # tried, refused: known locked again
    await adapter.send(part(None, "turn-1/3", "fourth"))
    assert thread_posts(fake) == [403, 403]
    assert len(fake.bot_messages(CHANNEL)) == 4


async def test_a_locked_thread_deleted_is_lost_not_answered_in_its_channel(fake, started):
    adapter, asked, lost = started
    await lock(fake, adapter)
    await adapter.send(part(asked, "turn-1/0", "first"))
    fake.delete_channel(THREAD)
    await fake.wait_for(lambda: lost.told)
    with pytest.raises(NotFound):
        await adapter.send(part(None, "turn-1/1", "second"))
    assert lost.told == [(str(CHANNEL), THREAD_DELETED, str(THREAD))] and len(fake.bot_messages(CHANNEL)) == 1


async def test_only_answers_a_thread_can_be_opened_on_are_remembered(fake, started):
    adapter, _, _ = started
    fake.push_dm(BOB, "hello")
    in_dm = await adapter.send(Outbound(chat_id=fake.dm_channel(BOB), thread_id=None, text="hi", kind="reply"))
    in_thread = await adapter.send(part(None, "t-1", "in the thread"))
    card = await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="⏳ working", kind="notice"))
    in_channel = await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="done", kind="reply"))
    assert int(card.message_id) in adapter._answers and int(in_channel.message_id) in adapter._answers
    assert int(in_dm.message_id) not in adapter._answers and int(in_thread.message_id) not in adapter._answers


async def test_an_unlock_heard_while_the_move_is_decided_is_not_forgotten(fake, started, monkeypatch):
    """discord.py holds no archived thread: the move fetches it, an await in which ``THREAD_UPDATE`` may say it
    unlocked. The refused answer is moved; the later ones are not sent to the channel for `RECHECK_SECONDS`."""
    adapter, asked, _ = started
    await lock(fake, adapter)
    fake.archive_thread(THREAD)
    await fake.wait_for(lambda: adapter._client.get_channel(THREAD) is None)
    to_its_channel = adapter._to_its_channel

    async def unlocked_meanwhile(message: Outbound) -> bool:
        moves = await to_its_channel(message)
        fake.lock_thread(THREAD, locked=False)  # a moderator unlocks it meanwhile: the raw update comes
        await fake.wait_for(lambda: THREAD not in adapter._locked._refused)
        return moves

    monkeypatch.setattr(adapter, "_to_its_channel", unlocked_meanwhile)
    await adapter.send(part(asked, "turn-1/0", "first"))
    monkeypatch.undo()
    later = part(None, "turn-2/0", "second")
    assert not adapter._locked.at_once(later, adapter._client)  # was: to the channel at once, for 10 minutes
    await adapter.send(later)
    assert [m.content for m in fake.bot_messages(THREAD)] == ["second"]
    assert thread_posts(fake) == [403, 200]
