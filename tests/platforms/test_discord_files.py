"""Files on Discord: attachments arrive as attachments (voice messages marked), and the adapter
fetches them from their attachment URLs, against FakeDiscord with the real discord.py client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import (
    Attachment,
    AttachmentTooLarge,
    CommandSpec,
    Deleting,
    Inbound,
    NotFound,
    Outbound,
    SupportsDownload,
)
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord, Upload
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.sink import Sink

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
USER = 42


fake = fake_discord()


@pytest.fixture
async def started(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Sink]]:
    adapter, sink = adapter_for(fake, max_attachment_bytes=1000), Sink()
    await adapter.start(sink, [CommandSpec("stop", "Stop the current turn")])
    yield adapter, sink
    await adapter.stop()
    await join_heartbeat_threads()


async def received(fake: FakeDiscord, sink: Sink) -> Inbound:
    await fake.wait_for(lambda: sink.inbound)
    return sink.inbound.pop()


def test_capabilities() -> None:
    adapter = DiscordAdapter("token")
    assert isinstance(adapter, SupportsDownload) and isinstance(adapter, Deleting)


async def test_attachments_arrive_and_download(fake: FakeDiscord, started) -> None:
    adapter, sink = started
    fake.push_dm(USER, "two files", files=[Upload("chart.png", PNG, "image/png"),
                                           Upload("notes.md", b"# notes", "text/markdown; charset=utf-8")])
    inbound = await received(fake, sink)
    assert inbound.text == "two files"  # no URLs pasted into the text any more
    image, notes = inbound.attachments
    assert (image.kind, image.name, image.mime_type, image.size) == ("image", "chart.png", "image/png", len(PNG))
    assert (notes.kind, notes.mime_type) == ("document", "text/markdown")
    assert await adapter.download(image) == PNG and await adapter.download(notes) == b"# notes"


async def test_an_attachment_alone_and_a_voice_message(fake: FakeDiscord, started) -> None:
    _, sink = started
    fake.push_dm(USER, "", files=[Upload("voice-message.ogg", b"OggS", "audio/ogg", voice=True)])
    inbound = await received(fake, sink)
    assert inbound.text == "" and inbound.attachments[0].kind == "voice"


async def test_over_the_cap_is_refused(fake: FakeDiscord, started) -> None:
    adapter, sink = started
    fake.push_dm(USER, "big", files=[Upload("big.bin", b"x" * 1001)])
    (big,) = (await received(fake, sink)).attachments
    with pytest.raises(AttachmentTooLarge):
        await adapter.download(big)
    with pytest.raises(AttachmentTooLarge):  # a size the message did not announce: the download checks
        await adapter.download(Attachment("document", "big.bin", None, None, big.ref))
    assert fake.downloads == [big.ref.split("/")[-2]]


async def test_an_expired_link_is_not_found(fake: FakeDiscord, started) -> None:
    adapter, _ = started
    with pytest.raises(NotFound):
        await adapter.download(Attachment("document", "x", None, None, f"{fake.url}/attachments/1/2/x"))


async def test_delete(fake: FakeDiscord, started) -> None:
    adapter, _ = started
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(chat_id=channel, thread_id=None, text="card"))
    await adapter.delete(channel, None, sent.message_id)
    assert fake.bot_messages(channel) == []
    await adapter.delete(channel, None, sent.message_id)  # already gone: fine


async def test_a_command_answer_is_deleted_through_its_interaction(fake: FakeDiscord, started) -> None:
    adapter, sink = started
    fake.push_interaction("stop", USER)
    command = await received(fake, sink)
    answer = await adapter.send(Outbound(chat_id=command.chat_id, thread_id=None, text="Stopped.", kind="command",
                                         reply_token=command.reply_token))
    await adapter.delete(command.chat_id, None, answer.message_id)
    assert fake.bot_messages(command.chat_id) == []
    assert fake.calls_to("DELETE /webhooks/{application_id}/{token}/messages/{message_id}")
