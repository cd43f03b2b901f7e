"""Files on Slack: a file share arrives as attachments, and the adapter fetches them with
files.info and the private URL (bot token) through slack-sdk and aiohttp, against FakeSlack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from platforms import slack_files
from platforms.base import (
    Attachment,
    AttachmentTooLarge,
    Deleting,
    EditUnsupported,
    Forbidden,
    Inbound,
    NotFound,
    Outbound,
    SupportsDownload,
)
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


fake = fake_slack()


@pytest.fixture
async def started(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, Sink]]:
    adapter, sink = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                                 ping_interval=0.2, max_attachment_bytes=1000), Sink()
    await adapter.start(sink)
    yield adapter, sink
    await adapter.stop()


async def received(fake: FakeSlack, sink: Sink) -> Inbound:
    await fake.wait_for(lambda: sink.inbound)
    return sink.inbound.pop()


def test_capabilities() -> None:
    adapter = SlackAdapter(bot_token="xoxb", app_token="xapp")
    assert isinstance(adapter, SupportsDownload) and isinstance(adapter, Deleting)


async def test_a_shared_image_arrives_with_its_text_and_downloads(fake: FakeSlack, started) -> None:
    adapter, sink = started
    await fake.push_file("DU1", "U1", PNG, "chart.png", mimetype="image/png", text="what does this show?")
    inbound = await received(fake, sink)
    assert inbound.text == "what does this show?"
    (image,) = inbound.attachments
    assert (image.kind, image.name, image.mime_type, image.size) == ("image", "chart.png", "image/png", len(PNG))
    assert await adapter.download(image) == PNG
    assert fake.calls_to("files.info")[-1].params["file"] == image.ref and fake.downloads == [image.ref]


async def test_documents_and_audio_clips(fake: FakeSlack, started) -> None:
    _, sink = started
    await fake.push_file("DU1", "U1", b"a,b\n1,2\n", "data.csv", mimetype="text/csv")
    assert (await received(fake, sink)).attachments[0].kind == "document"
    await fake.push_file("DU1", "U1", b"webm", "audio_message.webm", mimetype="audio/webm", subtype="slack_audio")
    assert (await received(fake, sink)).attachments[0].kind == "voice"


async def test_a_slack_connect_file_is_described_by_files_info(fake: FakeSlack, started) -> None:
    # Slack Connect events name a file by its id alone: without files.info an image would reach the model
    # as a document called F00000001 and a recorded clip would never be transcribed.
    adapter, sink = started
    await fake.push_file("DU1", "U1", PNG, "chart.png", mimetype="image/png", text="and this?", connect=True)
    (image,) = (await received(fake, sink)).attachments
    assert (image.kind, image.name, image.mime_type, image.size) == ("image", "chart.png", "image/png", len(PNG))
    assert await adapter.download(image) == PNG
    await fake.push_file("DU1", "U1", b"webm", "audio_message.webm", mimetype="audio/webm", subtype="slack_audio",
                         connect=True)
    assert (await received(fake, sink)).attachments[0].kind == "voice"


async def test_a_slack_connect_file_files_info_cannot_describe_still_arrives(fake: FakeSlack, started) -> None:
    adapter, sink = started
    fake.files_read_scope = False  # so the download fails later, and the chat is told it could not be fetched
    await fake.push_file("DU1", "U1", PNG, "chart.png", mimetype="image/png", connect=True)
    (stub,) = (await received(fake, sink)).attachments
    assert (stub.kind, stub.name) == ("document", stub.ref)
    with pytest.raises(Forbidden):
        await adapter.download(stub)


async def test_a_slack_connect_file_and_a_slow_gateway_are_still_acked_within_slacks_three_seconds() -> None:
    # files.info may take its 1.5 s and the sink is slow too: the ack may wait for the two together only
    # as long as for a slow sink alone (2 s), not one after the other (3.5 s, and Slack sends it again).
    release = asyncio.Event()

    async def slow_sink(inbound: Inbound) -> None:
        await release.wait()

    async with FakeSlack(ack_timeout=3.0) as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        await adapter.start(slow_sink)
        held = fake.hold("files.info")
        try:
            await fake.push_file("DU1", "U1", PNG, "chart.png", mimetype="image/png", connect=True)
            (envelope,) = fake.envelopes.values()
            await fake.wait_for(lambda: envelope.acked, 10)
            assert envelope.retry_attempt == 0  # acked before Slack's 3 s were up
        finally:
            held.set()
            release.set()
            await adapter.stop()


async def test_a_file_in_a_channel_needs_a_mention(fake: FakeSlack, started) -> None:
    _, sink = started
    await fake.push_file("C1", "U1", b"x", "notes.txt", mimetype="text/plain")
    await fake.push_file("C1", "U1", b"y", "todo.txt", mimetype="text/plain", text="look", mention=True)
    inbound = await received(fake, sink)
    assert inbound.text == "look" and inbound.attachments[0].name == "todo.txt"


async def test_over_the_cap_is_refused(fake: FakeSlack, started) -> None:
    adapter, sink = started
    await fake.push_file("DU1", "U1", b"x" * 1001, "big.bin")
    (big,) = (await received(fake, sink)).attachments
    with pytest.raises(AttachmentTooLarge):
        await adapter.download(big)
    with pytest.raises(AttachmentTooLarge):  # the size files.info reports is checked too
        await adapter.download(Attachment("document", "big.bin", None, None, big.ref))
    assert fake.downloads == []


async def test_without_files_read_the_scope_is_named(fake: FakeSlack, started, caplog) -> None:
    adapter, sink = started
    fake.files_read_scope = False
    await fake.push_file("DU1", "U1", b"x", "a.txt")
    (attachment,) = (await received(fake, sink)).attachments
    with caplog.at_level(logging.DEBUG, logger="platforms.slack"), pytest.raises(Forbidden) as refused:
        await adapter.download(attachment)
    assert "files:read" in str(refused.value)  # which the gateway's warning of the file it could not take names
    # The adapter's own line is at DEBUG: a warning here was a second one of the same refusal.
    [logged] = [r for r in caplog.records if "files.info failed" in r.getMessage()]
    assert logged.levelno == logging.DEBUG and "files:read" in logged.getMessage()


async def test_a_shared_html_file_downloads(fake: FakeSlack, started) -> None:
    # Any HTML was taken for Slack's sign-in page, and the file refused for a scope the app has.
    adapter, sink = started
    page = b"<html><body>the quarterly report</body></html>"
    await fake.push_file("DU1", "U1", page, "report.html", mimetype="text/html", text="summarise this")
    (html,) = (await received(fake, sink)).attachments
    assert html.mime_type == "text/html" and await adapter.download(html) == page


@pytest.mark.parametrize(("data", "name", "mimetype"), [(PNG, "chart.png", "image/png"),
                                                        (b"<html>the report</html>", "report.html", "text/html")],
                         ids=["image", "html"])
async def test_the_sign_in_page_instead_of_the_file_is_refused_naming_the_scope(
        fake: FakeSlack, data: bytes, name: str, mimetype: str) -> None:
    # files.info described the file, then the app lost files:read: Slack redirects its URL to the sign-in page.
    await fake.push_file("DU1", "U1", data, name, mimetype=mimetype)
    (shared,) = fake.files.values()
    described = {"file": fake.file_object(shared)}
    fake.files_read_scope = False

    async def info(file_id: str) -> dict:
        return described

    attachment = Attachment("document", name, mimetype, None, shared.id)
    async with aiohttp.ClientSession() as session:
        with pytest.raises(Forbidden, match="files:read"):
            await slack_files.download(info, session, fake.bot_token, attachment, 1000)
    assert fake.downloads == []


async def test_a_deleted_file_is_not_found(fake: FakeSlack, started) -> None:
    adapter, _ = started
    with pytest.raises(NotFound):
        await adapter.download(Attachment("document", "gone.txt", None, None, "F99999999"))


async def test_the_private_url_needs_the_bot_token(fake: FakeSlack) -> None:
    await fake.push_file("DU1", "U1", b"secret", "s.txt")
    url = fake.file_object(next(iter(fake.files.values())))["url_private"]
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        assert [r.status for r in resp.history] == [302]  # to Slack's sign-in page, not the file
        assert resp.content_type == "text/html" and b"secret" not in await resp.read()


async def test_delete(fake: FakeSlack, started) -> None:
    adapter, _ = started
    sent = await adapter.send(Outbound(chat_id="C1", thread_id=None, text="card"))
    await adapter.delete("C1", None, sent.message_id)
    assert fake.texts("C1") == []
    await adapter.delete("C1", None, sent.message_id)  # already gone: fine
    with pytest.raises(EditUnsupported):
        await adapter.delete("C1", None, "ephemeral:123")
