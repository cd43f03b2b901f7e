"""A thread a moderator locked: Discord refuses the bot's posts there (403, 50083 ``Thread is archived``) unless it
manages threads in the thread's channel, and a post no longer reopens it, as it reopens an archived thread that is not
locked. `FakeDiscord` models that, and `DiscordAdapter` (real discord.py against it) posts an answer refused so in
the thread's parent channel instead, naming the thread and pinging the asker, once (`platforms.discord_locked`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, MessageTooLong, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.chat_lost import Lost, losing

GUILD, CHANNEL, THREAD, BOB = 500, 600, 800, 42
POST = "POST /channels/{channel_id}/messages"

fake = fake_discord()


@pytest.fixture
async def started(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Lost, str]]:
    """An adapter that has heard Bob ask in ``THREAD``; the id of his question."""
    try:
        async with losing(adapter_for(fake)) as (adapter, lost, sink):
            asked = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True,
                                            thread_id=THREAD)
            await fake.wait_for(lambda: sink.inbound)
            yield adapter, lost, asked
    finally:
        await join_heartbeat_threads()


def answer(asked: str | None, text: str = "about 3 MB", key: str = "turn-1/0", kind: str = "reply") -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text=text, kind=kind,  # type: ignore[arg-type]
                    idempotency_key=key, reply_to=asked)


def thread_state(fake: FakeDiscord) -> dict:
    return fake._guilds[str(GUILD)]["threads"][str(THREAD)]["thread_metadata"]


async def test_the_fake_refuses_a_locked_thread_and_reopens_only_an_unlocked_one(fake, started):
    adapter, _, asked = started
    fake.archive_thread(THREAD)
    await adapter.send(answer(asked, "reopens it", key="a"))  # archived, not locked: the post reopens it
    assert thread_state(fake)["archived"] is False

    fake.lock_thread(THREAD)
    fake.archive_thread(THREAD)
    before = len(fake.messages[str(THREAD)])
    with pytest.raises(Forbidden, match="50083"):  # first: refused so, the thread is known locked, and shows none
        await adapter.send(answer(asked, "a notice", key="b", kind="notice"))  # not an answer: not moved
    await adapter.typing(str(CHANNEL), str(THREAD))
    assert thread_state(fake)["archived"] is True and len(fake.messages[str(THREAD)]) == before
    # Refused as the thread is, not unquoted as for a lacking Read Message History: one call, not two.
    assert [c.status for c in fake.calls_to(POST) if c.path == f"/channels/{THREAD}/messages"][-1:] == [403]
    assert len([c for c in fake.calls_to(POST) if c.path == f"/channels/{THREAD}/messages"]) == 2
    assert [c for c in fake.calls if c.path == f"/channels/{THREAD}/typing"] == []

    fake.manage_threads(CHANNEL)  # a moderator's post goes, and reopens it
    adapter._locked.drop(THREAD)  # tried again, as after `discord_locked.RECHECK_SECONDS`
    await adapter.send(answer(asked, "a moderator's", key="c", kind="notice"))
    assert thread_state(fake)["archived"] is False and fake.bot_messages(THREAD)[-1].content == "a moderator's"


async def test_an_answer_refused_by_a_locked_thread_goes_to_its_channel_once(fake, started):
    adapter, lost, asked = started
    fake.lock_thread(THREAD)
    part = answer(asked)
    sent = await adapter.send(part)

    assert fake.bot_messages(THREAD) == []
    [moved] = fake.bot_messages(CHANNEL)
    assert moved.id == sent.message_id
    assert moved.content == f"**↪ For <@{BOB}>, from <#{THREAD}>** (the thread is locked):\nabout 3 MB"
    assert moved.pings.users == (str(BOB),) and not moved.pings.everyone and moved.reply_to is None
    assert lost.told == []  # the thread is not lost: unlocked, it is written to again

    # Sent again (its answer lost, a retry): the part's nonce keeps it one message.
    assert (await adapter.send(part)).message_id == sent.message_id
    assert len(fake.bot_messages(CHANNEL)) == 1

    # A later part of the answer quotes nothing: the head names the thread alone, and pings no one.
    await adapter.send(answer(None, "and more", key="turn-1/1"))
    later = fake.bot_messages(CHANNEL)[-1]
    assert later.content == f"**↪ From <#{THREAD}>** (the thread is locked):\nand more" and not later.pings.users

    fake.lock_thread(THREAD, locked=False)  # unlocked: answers go to the thread again, once the bot is told
    await fake.wait_for(lambda: adapter._client.get_channel(THREAD).locked is False)
    await adapter.send(answer(asked, "back in the thread", key="turn-2/0"))
    assert fake.bot_messages(THREAD)[-1].content == "back in the thread"


async def test_a_deleted_question_still_moves_the_answer_naming_the_thread(fake, started):
    adapter, _, asked = started
    fake.lock_thread(THREAD)
    fake.delete_message(THREAD, asked)
    await adapter.send(answer(asked))
    assert fake.bot_messages(CHANNEL)[-1].content.startswith(f"**↪ From <#{THREAD}>**")


async def test_an_answer_too_long_with_its_head_is_refused_as_too_long(fake, started):
    adapter, _, asked = started
    fake.lock_thread(THREAD)
    with pytest.raises(MessageTooLong):  # the outbox halves it, each half moved in its turn
        await adapter.send(answer(asked, "x" * 1990))
    assert fake.bot_messages(CHANNEL) == []


async def test_a_file_of_the_answer_goes_to_the_channel_too(fake, started, tmp_path: Path):
    adapter, _, asked = started
    fake.lock_thread(THREAD)
    path = tmp_path / "report.txt"
    path.write_bytes(b"numbers")
    await adapter.send_file(replace(answer(asked, "the report"), kind="reply"),
                            OutboundFile(str(path), "report.txt", 7))
    [moved] = fake.bot_messages(CHANNEL)
    assert moved.content.endswith("the report") and moved.attachments[0]["filename"] == "report.txt"
