"""A Discord slash command's answer for its user alone (`DiscordAdapter.answers_privately`: a refusal) past
``display.max_message_parts``: its first parts go as ephemeral follow-ups, and the rest is never posted in the
channel as ``answer.md``: a note to that user alone says it was not sent, and why; a file part journaled as private
(the adapter learnt it after the outbox made the file) is refused, not posted in the channel.
The real discord.py client and outbox against the fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.base import BadRequest, CommandSpec, Inbound, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

EPHEMERAL = 64
GUILD, CHANNEL, STRANGER = 500, 600, 999
TEXT = "\n\n".join(f"secret line {n} " + "word " * 60 for n in range(40))
"""About 12 KB: 7 of Discord's 2,000-character parts."""
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


async def test_a_long_answer_for_its_user_alone_ends_in_a_note_to_them_not_a_file_in_the_channel(
        fake: FakeDiscord, command: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = command
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": adapter}, files=OutboxFiles(tmp_path / "outbox-files"),
                    max_parts=lambda _: 2)
    await outbox.start()
    try:
        keys = await outbox.enqueue_long("discord", inbound.chat_id, None, TEXT, kind="command", key="answer",
                                         reply_token=inbound.reply_token)
        assert keys == ["answer:0", "answer:1", "answer:cut"]
        assert await outbox.flush(WAIT)
    finally:
        await outbox.close()
        store.close()
    assert for_all(fake) == []
    alone = [m.content for m in fake.bot_messages(CHANNEL) if m.flags & EPHEMERAL]
    assert len(alone) == 3 and alone[0].startswith("secret line 0")
    assert alone[2].startswith("The answer is too long for this chat (")
    assert "was not sent: this answer is for you alone" in alone[2]


async def test_a_file_for_its_user_alone_is_refused_not_posted_in_the_channel(
        fake: FakeDiscord, command: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = command
    path = tmp_path / "answer.md"
    path.write_text(TEXT)
    message = Outbound(chat_id=inbound.chat_id, thread_id=None, text="The whole of it is in `answer.md`.",
                       kind="command", reply_token=inbound.reply_token, idempotency_key="answer:file:0",
                       private=True)
    with pytest.raises(BadRequest, match="not posted in the channel"):
        await adapter.send_file(message, OutboundFile(str(path), "answer.md", path.stat().st_size))
    assert for_all(fake) == []
