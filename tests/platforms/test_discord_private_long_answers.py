"""A Discord slash command's answer for its user alone (`DiscordAdapter.answers_privately`: a refusal) past
``display.max_message_parts``: its first parts go as ephemeral follow-ups, and then the whole of it as ``answer.md``,
an ephemeral follow-up too: that user gets the whole answer, and the channel sees none of it. It ended in a note
saying the rest was not sent, as on Slack, whose ephemeral messages carry no file; Discord's follow-ups do.
Journaled as private, the file goes so after a restart too, and past the interaction's 15 minutes nowhere.
The real discord.py client and outbox against the fake."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.long_messages import in_file_text
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.base import CommandSpec, Inbound, NotFound, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord, FakeMessage
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

EPHEMERAL = 64
GUILD, CHANNEL, STRANGER = 500, 600, 999
TEXT = "\n\n".join(f"secret line {n} " + "word " * 60 for n in range(40))
"""About 12 KB: 7 of Discord's 2,000-character parts."""
CHANNEL_POST = "POST /channels/{channel_id}/messages"
WAIT = 5.0

fake = fake_discord()


@pytest.fixture
async def command(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Inbound]]:
    """The adapter, and a stranger's command it was told the gateway refused: its answers are for them alone."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: got)
        adapter.refused(got[0])
        yield adapter, got[0]
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


def for_all(fake: FakeDiscord) -> list[str]:
    """What the channel sees of the bot's: its posts and files, "thinking…" (empty) left out."""
    return [m.content or "(a file)" for m in fake.bot_messages(CHANNEL)
            if not m.flags & EPHEMERAL and (m.content or m.attachments)]


def alone(fake: FakeDiscord) -> list[FakeMessage]:
    return [m for m in fake.bot_messages(CHANNEL) if m.flags & EPHEMERAL]


def file_of(fake: FakeDiscord, message: FakeMessage) -> tuple[str, bytes]:
    [attachment] = message.attachments
    return attachment["filename"], fake.attachment_data[attachment["id"]]


async def journaled(adapter: DiscordAdapter, path: Path, files: Path,
                    then: Callable[[Outbox], Awaitable[object]], *, start: bool = True) -> None:
    """One process's outbox on the state file ``path``, bounded to 2 parts, with ``then`` run on it (started
    unless not ``start``: what it journals waits for the next process); closed after."""
    store = GatewayStore(path)
    outbox = Outbox(store.outbox, {"discord": adapter}, files=OutboxFiles(files), max_parts=lambda _: 2)
    if start:
        await outbox.start()
    try:
        await then(outbox)
    finally:
        await outbox.close()
        store.close()


async def test_a_long_answer_for_its_user_alone_ends_in_answer_md_to_them_alone(
        fake: FakeDiscord, command: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = command

    async def answer(outbox: Outbox) -> None:
        keys = await outbox.enqueue_long("discord", inbound.chat_id, None, TEXT, kind="command", key="answer",
                                         reply_token=inbound.reply_token)
        assert keys == ["answer:0", "answer:1", "answer:file:0"]
        assert await outbox.flush(WAIT)
        assert await outbox.wait_sent("answer:file:0", timeout=WAIT) is not None

    await journaled(adapter, tmp_path / "state.db", tmp_path / "outbox-files", answer)
    assert for_all(fake) == [] and fake.calls_to(CHANNEL_POST) == []
    first, second, last = alone(fake)
    assert first.content.startswith("secret line 0") and not first.attachments and not second.attachments
    assert last.content == in_file_text(len(TEXT.encode()))
    assert file_of(fake, last) == ("answer.md", TEXT.encode())
    assert not any(m.attachments for m in fake.bot_messages(CHANNEL) if not m.flags & EPHEMERAL)


async def test_a_long_answer_for_its_user_alone_left_at_a_restart_goes_to_them_alone_after_it(
        fake: FakeDiscord, tmp_path: Path) -> None:
    # Journaled private by a process that knew it (it was told of the refusal); the next one does not know it.
    path, files = tmp_path / "state.db", tmp_path / "outbox-files"
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    before = adapter_for(fake)
    await before.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        fake.push_interaction("agents", STRANGER, channel=CHANNEL, guild=GUILD)
        await fake.wait_for(lambda: got)
        before.refused(got[0])

        async def journal(outbox: Outbox) -> None:
            await outbox.enqueue_long("discord", got[0].chat_id, None, TEXT, kind="command", key="answer",
                                      reply_token=got[0].reply_token)

        await journaled(before, path, files, journal, start=False)  # gone before it sent any of it
    finally:
        await before.stop()
        await join_heartbeat_threads()
    after = adapter_for(fake)
    await after.start(sink, [CommandSpec("agents", "List running subagents")])
    try:
        async def send(outbox: Outbox) -> None:
            assert await outbox.wait_sent("answer:file:0", timeout=WAIT) is not None

        await journaled(after, path, files, send)
    finally:
        await after.stop()
        await join_heartbeat_threads()
    assert for_all(fake) == [] and fake.calls_to(CHANNEL_POST) == []
    assert [file_of(fake, m) for m in alone(fake) if m.attachments] == [("answer.md", TEXT.encode())]
    assert len(alone(fake)) == 3


async def test_a_file_for_its_user_alone_past_the_tokens_15_minutes_is_posted_nowhere(
        fake: FakeDiscord, command: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = command
    path = tmp_path / "answer.md"
    path.write_text(TEXT)
    message = Outbound(chat_id=inbound.chat_id, thread_id=None, text="The whole of it is in `answer.md`.",
                       kind="command", reply_token=inbound.reply_token, idempotency_key="answer:file:0",
                       private=True)
    fake.clock = lambda: time.monotonic() + 16 * 60
    with pytest.raises(NotFound, match="the interaction expired: an answer for its user alone is not posted"):
        await adapter.send_file(message, OutboundFile(str(path), "answer.md", path.stat().st_size))
    assert fake.calls_to(CHANNEL_POST) == []
    assert not any(m.attachments for m in fake.bot_messages(CHANNEL))
