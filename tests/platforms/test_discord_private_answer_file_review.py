"""Review of a long private answer's ``answer.md`` as an ephemeral follow-up (512a5551): the file first through the
interaction, the interaction's 15 minutes over between the parts and the file, and a public answer's file.
The real discord.py client and outbox against the fake."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.long_messages import in_file_text
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms import discord_answers
from platforms.base import CommandSpec, Inbound, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

EPHEMERAL = 64
GUILD, CHANNEL, USER = 500, 600, 999
TEXT = "\n\n".join(f"secret line {n} " + "word " * 60 for n in range(40))
CHANNEL_POST = "POST /channels/{channel_id}/messages"
WAIT = 5.0

fake = fake_discord()


async def started(fake: FakeDiscord, *, refuse: bool) -> tuple[DiscordAdapter, Inbound]:
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("agents", "List running subagents")])
    fake.push_interaction("agents", USER, channel=CHANNEL, guild=GUILD)
    await fake.wait_for(lambda: got)
    if refuse:
        adapter.refused(got[0])
    return adapter, got[0]


@pytest.fixture
async def private(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Inbound]]:
    adapter, inbound = await started(fake, refuse=True)
    try:
        yield adapter, inbound
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


@pytest.fixture
async def public(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Inbound]]:
    adapter, inbound = await started(fake, refuse=False)
    try:
        yield adapter, inbound
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def long_answer(adapter: DiscordAdapter, inbound: Inbound, tmp_path: Path) -> Outbox:
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": adapter}, files=OutboxFiles(tmp_path / "files"), max_parts=lambda _: 2)
    await outbox.start()
    try:
        keys = await outbox.enqueue_long("discord", inbound.chat_id, None, TEXT, kind="command", key="answer",
                                         reply_token=inbound.reply_token)
        assert keys == ["answer:0", "answer:1", "answer:file:0"]
        assert await outbox.flush(WAIT)
    finally:
        await outbox.close()
    return outbox


def part(inbound: Inbound, key: str, text: str) -> Outbound:
    return Outbound(chat_id=inbound.chat_id, thread_id=None, text=text, kind="command",
                    reply_token=inbound.reply_token, idempotency_key=key, private=True)


async def test_a_private_file_first_through_the_interaction_deletes_thinking_then_goes_to_its_user_alone(
        fake: FakeDiscord, private: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = private
    path = tmp_path / "answer.md"
    path.write_bytes(b"# the whole answer\n")
    caption = in_file_text(19)
    await adapter.send_file(part(inbound, "answer:file:0", caption), OutboundFile(str(path), "answer.md", 19))
    [sent] = fake.bot_messages(CHANNEL)  # "thinking…" deleted, not left nor edited into the file's message
    assert sent.flags & EPHEMERAL and sent.content == caption and not sent.edits
    assert [a["filename"] for a in sent.attachments] == ["answer.md"]
    assert fake.calls_to(CHANNEL_POST) == []
    [upload] = [c.body for c in fake.calls_to("POST /webhooks/{application_id}/{token}") if c.body.get("files")]
    # As Discord asks: each files[n] named in payload_json's attachments; no one pinged.
    assert [(a["id"], a["filename"]) for a in upload["attachments"]] == [(0, "answer.md")]
    assert upload["allowed_mentions"]["parse"] == [] and upload["flags"] & EPHEMERAL


async def test_past_the_15_minutes_between_the_parts_and_the_file_nothing_goes_in_the_channel(
        fake: FakeDiscord, private: tuple[DiscordAdapter, Inbound], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    adapter, inbound = private
    # The token lapses once both parts went: the file (and the note in its place) meet an expired interaction.
    fake.clock = lambda: time.monotonic() + (16 * 60 if len(fake.bot_messages(CHANNEL)) >= 2 else 0)
    with caplog.at_level(logging.INFO):
        outbox = await long_answer(adapter, inbound, tmp_path)
    assert [m.content[:13] for m in fake.bot_messages(CHANNEL)] == ["secret line 0", "secret line 6"]
    assert all(m.flags & EPHEMERAL and not m.attachments for m in fake.bot_messages(CHANNEL))
    assert fake.calls_to(CHANNEL_POST) == []
    store = outbox._store  # noqa: SLF001
    row = store.message("answer:file:0")
    assert row is not None and row.status == "failed"
    assert (row.last_error or "").startswith("NotFound: the interaction expired: an answer for its user alone")
    lines = [r.getMessage() for r in caplog.records if "answer:file:0" in r.getMessage()]
    assert any("the interaction expired" in line for line in lines), lines


async def test_a_long_public_answer_to_a_command_still_posts_answer_md_in_the_channel(
        fake: FakeDiscord, public: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    adapter, inbound = public
    await long_answer(adapter, inbound, tmp_path)
    [post] = fake.calls_to(CHANNEL_POST)
    messages = fake.bot_messages(CHANNEL)
    assert not any(m.flags & EPHEMERAL for m in messages)
    filed = [m for m in messages if m.attachments]
    assert len(filed) == 1 and filed[0].content == in_file_text(len(TEXT.encode()))
    assert filed[0].interaction_id is None  # posted in the channel, as before the commit


async def test_a_private_answer_md_is_given_its_bytes_time_to_upload_as_a_channels_file_is(
        fake: FakeDiscord, private: tuple[DiscordAdapter, Inbound], tmp_path: Path) -> None:
    # The answers' session bounds each call (30 s; 50 ms here): a channel's upload gets a second more for every
    # `discord_calls.SLOWEST_UPLOAD` bytes, so 10 MiB at 400 kbit/s goes. answer.md through the interaction had 30 s
    # whole: on a slow line each try was cut off, tried again, and given up on.
    adapter, inbound = private
    await adapter.send(part(inbound, "answer:0", "the first part"))  # "thinking…" deleted: the upload is the call
    answers = adapter._interactions  # noqa: SLF001
    session, answers.session = answers.session, discord_answers.open_session(0.05)
    await session.close()
    path = tmp_path / "answer.md"
    path.write_bytes(b"x" * 100_000)  # 2 s more at 50 KB/s
    release = fake.hold("POST /webhooks/{application_id}/{token}")
    upload = asyncio.create_task(adapter.send_file(part(inbound, "answer:file:0", in_file_text(100_000)),
                                                   OutboundFile(str(path), "answer.md", 100_000)))
    await fake.wait_for(lambda: any(c.body and c.body.get("files") for c in fake.calls_to(
        "POST /webhooks/{application_id}/{token}")))
    done, _ = await asyncio.wait({upload}, timeout=0.09)  # past the call's bound, well within the upload's
    release.set()
    assert not done, upload.exception()
    await upload
    assert [a["filename"] for m in fake.bot_messages(CHANNEL) for a in m.attachments] == ["answer.md"]
