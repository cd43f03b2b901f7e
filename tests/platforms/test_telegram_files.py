"""Files on Telegram: photos, documents and voice arrive as attachments, and the adapter fetches
them with getFile and the file URL through aiogram, against FakeTelegram."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import Attachment, AttachmentTooLarge, BadRequest, Deleting, Inbound, Outbound, SupportsDownload
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def started(fake: FakeTelegram) -> AsyncIterator[tuple[TelegramAdapter, Sink]]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url, max_attachment_bytes=1000), Sink()
    await adapter.start(sink)
    yield adapter, sink
    await adapter.stop()


async def received(fake: FakeTelegram, sink: Sink) -> Inbound:
    await fake.wait_for(lambda: sink.inbound)
    return sink.inbound.pop()


def test_capabilities() -> None:
    adapter = TelegramAdapter("1:x")
    assert isinstance(adapter, SupportsDownload) and isinstance(adapter, Deleting)
    assert adapter.max_attachment_bytes == 20 * 1024 * 1024


async def test_a_photo_with_a_caption_arrives_and_downloads(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    fake.push_photo(42, PNG, caption="what is this?", thumbnail=b"small")
    inbound = await received(fake, sink)
    assert inbound.text == "what is this?"
    (photo,) = inbound.attachments
    assert (photo.kind, photo.mime_type, photo.size) == ("image", "image/jpeg", len(PNG))  # the largest size
    assert photo.name.startswith("photo-") and photo.name.endswith(".jpg")
    assert await adapter.download(photo) == PNG
    assert fake.calls_to("getFile")[-1]["file_id"] == photo.ref and len(fake.downloads) == 1


async def test_a_photo_without_caption_still_arrives(fake: FakeTelegram, started) -> None:
    _, sink = started
    fake.push_photo(42, PNG)
    inbound = await received(fake, sink)
    assert inbound.text == "" and [a.kind for a in inbound.attachments] == ["image"]


async def test_an_album_arrives_as_one_message_with_every_photo_and_the_caption(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    first, *_ = fake.push_album(42, [PNG, PNG + b"2", PNG + b"3"], caption="compare these")
    fake.push_message(42, "and this is separate")
    await fake.wait_for(lambda: len(sink.inbound) == 2)
    album, text = sink.inbound
    assert (album.text, album.event_id) == ("compare these", f"{fake.bot_user['id']}:{first}")
    assert [await adapter.download(a) for a in album.attachments] == [PNG, PNG + b"2", PNG + b"3"]
    assert text.text == "and this is separate" and not text.attachments
    await fake.wait_for(lambda: not fake.pending)  # all confirmed once handed over


async def test_an_album_served_over_two_polls_is_still_one_message(fake: FakeTelegram, started) -> None:
    # Telegram's long poll answers as soon as the first item is there: the rest come in the next answer.
    adapter, sink = started
    (first,) = fake.push_album(42, [PNG], caption="compare these", media_group_id="g1")
    await fake.wait_for(lambda: first in fake.served)
    fake.push_album(42, [PNG + b"2", PNG + b"3"], media_group_id="g1")
    fake.push_message(42, "and this is separate")
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "and this is separate")
    album, text = sink.inbound
    assert (album.text, album.event_id) == ("compare these", f"{fake.bot_user['id']}:{first}")
    assert [await adapter.download(a) for a in album.attachments] == [PNG, PNG + b"2", PNG + b"3"]
    await fake.wait_for(lambda: not fake.pending)


async def test_an_album_in_a_group_follows_its_caption(fake: FakeTelegram, started) -> None:
    _, sink = started
    group = dict(chat_type="supergroup", user_id=5)
    fake.push_album(-100, [PNG, PNG], caption="not for the bot", **group)
    fake.push_album(-100, [PNG, PNG], caption="@switchboard_bot look", **group)
    fake.push_message(-100, "@switchboard_bot sentinel", **group)  # the chat's albums go before it
    await fake.wait_for(lambda: len(sink.inbound) == 2)
    assert [(i.text, len(i.attachments)) for i in sink.inbound] == [("@switchboard_bot look", 2),
                                                                    ("@switchboard_bot sentinel", 0)]


async def test_every_caption_of_an_album_reaches_the_model_in_order_each_once(fake: FakeTelegram, started) -> None:
    # Telegram takes a caption per item: only the first item's was read, the others dropped.
    _, sink = started
    fake.push_album(42, [PNG, PNG + b"2", PNG + b"3", PNG + b"4"],
                    captions=["the front 🚪", None, "the back", "the front 🚪"])
    group = dict(chat_type="supergroup", user_id=5)
    fake.push_album(-100, [PNG, PNG], captions=["two photos", "@switchboard_bot which is sharper?"], **group)
    fake.push_message(-100, "@switchboard_bot sentinel", **group)
    await fake.wait_for(lambda: len(sink.inbound) == 3)
    [private] = [i for i in sink.inbound if i.chat_id == "42"]
    [addressed, _] = [i for i in sink.inbound if i.chat_id == "-100"]
    assert (private.text, len(private.attachments)) == ("the front 🚪\n\nthe back", 4)
    # The second item's mention addresses the album to the bot, as it would a message.
    assert (addressed.text, len(addressed.attachments)) == ("two photos\n\n@switchboard_bot which is sharper?", 2)


async def test_another_members_message_does_not_cut_an_album_short(fake: FakeTelegram, started) -> None:
    # In a group the bot hears everyone: a message of someone else, between two polls of an album,
    # was not written after it by its sender, so the album is still gathered whole.
    adapter, sink = started
    alice, bob = dict(chat_type="supergroup", user_id=5), dict(chat_type="supergroup", user_id=6, username="bob")
    (first,) = fake.push_album(-100, [PNG], caption="@switchboard_bot compare these", media_group_id="g1", **alice)
    await fake.wait_for(lambda: first in fake.served)
    fake.push_message(-100, "lunch?", **bob)  # served before the rest of the album
    fake.push_album(-100, [PNG + b"2", PNG + b"3"], media_group_id="g1", **alice)
    fake.push_message(-100, "@switchboard_bot sentinel", **alice)
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "@switchboard_bot sentinel")
    album, _ = sink.inbound
    assert (album.text, album.event_id) == ("@switchboard_bot compare these", f"{fake.bot_user['id']}:{first}")
    assert [await adapter.download(a) for a in album.attachments] == [PNG, PNG + b"2", PNG + b"3"]


async def test_the_largest_photo_size_under_the_cap_is_chosen(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    fake.push_photo(42, b"x" * 5000, thumbnail=PNG)  # the full size is over the 1000-byte cap
    (photo,) = (await received(fake, sink)).attachments
    assert photo.size == len(PNG) and await adapter.download(photo) == PNG


async def test_documents_and_voice(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    fake.push_document(42, b"%PDF-1.4 report", "Q3 report.pdf", mime_type="application/pdf", caption="summarise")
    doc = await received(fake, sink)
    assert doc.text == "summarise"
    assert doc.attachments[0] == Attachment("document", "Q3 report.pdf", "application/pdf", 15,
                                            doc.attachments[0].ref)
    fake.push_document(42, PNG, "scan.png", mime_type="image/png")
    assert (await received(fake, sink)).attachments[0].kind == "image"  # a picture sent as a file
    fake.push_voice(42, b"OggS voice")
    (voice,) = (await received(fake, sink)).attachments
    assert (voice.kind, voice.mime_type) == ("voice", "audio/ogg") and await adapter.download(voice) == b"OggS voice"


async def test_a_round_video_message_arrives_and_downloads(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    fake.push_video_note(42, b"\x00\x00\x00\x18ftypmp42 round")
    (note,) = (await received(fake, sink)).attachments
    assert (note.kind, note.mime_type, note.name.endswith(".mp4")) == ("document", "video/mp4", True)
    assert await adapter.download(note) == b"\x00\x00\x00\x18ftypmp42 round"


async def test_over_the_cap_is_refused_before_downloading(fake: FakeTelegram, started) -> None:
    adapter, sink = started
    fake.push_document(42, b"x" * 1001, "big.bin")
    (big,) = (await received(fake, sink)).attachments
    with pytest.raises(AttachmentTooLarge) as caught:
        await adapter.download(big)
    assert (caught.value.size, caught.value.limit) == (1001, 1000)
    assert fake.calls_to("getFile") == [] and fake.downloads == []


async def test_a_file_larger_than_it_said_is_cut_off_while_streaming(fake: FakeTelegram, started) -> None:
    adapter, _ = started
    meta = fake.add_file(b"y" * 5000)
    liar = Attachment("document", "liar.bin", None, 10, meta["file_id"])  # claims 10 bytes
    with pytest.raises(AttachmentTooLarge) as caught:
        await adapter.download(liar)
    assert caught.value.limit == 1000


async def test_telegrams_own_20_mb_limit_is_a_clear_refusal(fake: FakeTelegram,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, max_attachment_bytes=10**9)
    try:
        meta = fake.add_file(b"z" * (20 * 1024 * 1024 + 1))
        with caplog.at_level(logging.WARNING, logger="platforms.telegram"), pytest.raises(AttachmentTooLarge) as caught:
            await adapter.download(Attachment("document", "huge.bin", None, None, meta["file_id"]))
        assert not caplog.records  # the gateway says what became of the file: a user's too large one at INFO
        assert caught.value.limit == 20 * 1024 * 1024  # Telegram's limit, told to the user: not the cap
    finally:
        await adapter.stop()


async def test_an_unknown_file_is_a_delivery_error(fake: FakeTelegram, started) -> None:
    adapter, _ = started
    with pytest.raises(BadRequest, match="invalid file_id"):
        await adapter.download(Attachment("document", "gone.bin", None, None, "FILE-unknown"))


async def test_delete_removes_a_message_and_a_gone_one_is_fine(fake: FakeTelegram, started,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    adapter, _ = started
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="card"))
    await adapter.delete("42", None, sent.message_id)
    assert fake.messages["42"] == []
    with caplog.at_level(logging.WARNING, logger="platforms.telegram"):
        await adapter.delete("42", None, sent.message_id)  # already gone: no error, nor a warning that it failed
    assert len(fake.calls_to("deleteMessage")) == 2
    assert not caplog.records


async def test_an_album_posted_to_a_webhook_is_one_message(fake: FakeTelegram) -> None:
    # Telegram posts an album's items to the webhook each on its own, over several connections at once.
    async with webhook_adapter(fake, max_attachment_bytes=1000) as (adapter, sink):
        updates = fake.album_updates(42, [PNG, PNG + b"2", PNG + b"3"], caption="compare these")
        assert await asyncio.gather(*(fake.deliver_webhook(u) for u in reversed(updates))) == [200] * 3
        (album,) = sink.inbound
        assert (album.text, album.event_id) == ("compare these", f"{fake.bot_user['id']}:{updates[0]['update_id']}")
        assert [await adapter.download(a) for a in album.attachments] == [PNG, PNG + b"2", PNG + b"3"]


async def test_a_text_posted_to_a_webhook_while_its_chats_album_gathers_is_handed_over_after_it(
        fake: FakeTelegram) -> None:
    # Telegram posts the album's items and then the text, each over a connection of its own: the
    # text must not overtake the album, or its turn is interrupted by the album's.
    async with webhook_adapter(fake, max_attachment_bytes=1000) as (adapter, sink):
        updates = fake.album_updates(42, [PNG, PNG + b"2"], caption="compare these")
        album = [asyncio.ensure_future(fake.deliver_webhook(u)) for u in updates]
        await fake.wait_for(lambda: adapter.webhook_albums.gathering(42))
        assert await fake.deliver_webhook(fake.message_update(42, "which one is sharper?")) == 200
        assert await asyncio.gather(*album) == [200, 200]
        assert [i.text for i in sink.inbound] == ["compare these", "which one is sharper?"]


class FailingOnce(Sink):
    """A gateway whose first write fails (its database refused it, say)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def __call__(self, inbound: Inbound) -> None:
        if not self.failed:
            self.failed = True
            raise OSError(errno.ENOSPC, "No space left on device")
        await super().__call__(inbound)


async def test_an_album_a_webhook_could_not_record_is_refused_whole_and_taken_again(fake: FakeTelegram) -> None:
    async with webhook_adapter(fake, sink=FailingOnce()) as (_, sink):
        updates = fake.album_updates(42, [PNG, PNG + b"2"], caption="compare these")
        assert await asyncio.gather(*(fake.deliver_webhook(u) for u in updates)) == [500, 500]
        assert await asyncio.gather(*(fake.deliver_webhook(u) for u in updates)) == [200, 200]  # Telegram again
        (album,) = sink.inbound
        assert (album.text, len(album.attachments)) == ("compare these", 2)
