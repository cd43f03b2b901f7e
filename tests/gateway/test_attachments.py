"""gateway.attachments: safe storage in the workspace, and what a message's files make of the turn's
input. The platform side (real SDKs, real downloads) is in tests/platforms/test_*_files.py and
tests/scenarios/test_attachments_chat.py; here an in-memory source stands in for the adapter."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import os
import threading
from pathlib import Path

import pytest

from agent import ModelError
from agent.testing import FakeClock
from gateway import attachments
from gateway.attachments import (
    DOWNLOAD_TRIES,
    MAX_NAME,
    RETRY_WAIT_MAX,
    VOICE_UNSUPPORTED,
    chat_file_scope,
    chat_folder,
    prepare,
    safe_name,
    store,
)
from gateway.file_names import file_name
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config
from platforms.base import (
    Attachment,
    AttachmentTooLarge,
    BadRequest,
    DeliveryError,
    Forbidden,
    Inbound,
    NetworkError,
    NotFound,
    RateLimited,
)
from tests.pictures import PNG

WAIT = 5.0  # seconds of real time a thread may take to reach a point the test waits for


class Files:
    """A download source holding files by ref, with the adapter's cap."""

    def __init__(self, files: dict[str, bytes], cap: int = 1000) -> None:
        self.files, self.max_attachment_bytes = files, cap

    async def download(self, attachment: Attachment) -> bytes:
        data = self.files.get(attachment.ref)
        if data is None:
            raise NetworkError("connection reset")
        if len(data) > self.max_attachment_bytes:
            raise AttachmentTooLarge("too large", size=len(data), limit=self.max_attachment_bytes)
        return data


class Transcriber:
    def __init__(self, text: str | Exception) -> None:
        self.text, self.calls = text, []

    async def transcribe(self, audio: bytes, *, filename: str, mime_type: str | None = None) -> str:
        self.calls.append((audio, filename, mime_type))
        if isinstance(self.text, Exception):
            raise self.text
        return self.text


def image(ref: str, name: str = "photo.jpg") -> Attachment:
    return Attachment("image", name, "image/jpeg", None, ref)


async def run(files: Files, attachments: list[Attachment], text: str = "", *, ws: Path, vision: bool = True,
              transcriber: Transcriber | None = None, clock: FakeClock | None = None):
    return await prepare(files, "telegram", tuple(attachments), text, workspace=ws, folder="s-1",
                         supports_vision=vision, transcriber=transcriber, clock=clock or FakeClock())


# -- names and storage ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "safe"), [
    ("../../etc/passwd", "passwd"), ("..", "file"), (".bashrc", "bashrc"), ("C:\\Users\\x\\evil.exe", "evil.exe"),
    ("a b/c d.pdf", "c_d.pdf"), ("résumé 2024.pdf", "résumé_2024.pdf"), ("$(rm -rf ~);.sh", "rm_-rf_.sh"),
    ("", "file"), ("\x00\x01", "file"),
])
def test_safe_names_stay_in_their_folder(name: str, safe: str) -> None:
    assert safe_name(name) == safe


@pytest.mark.parametrize("name", ["रिपोर्ट.pdf", "தமிழ்_அறிக்கை.txt", "مُرَاجَعَة.txt", "ສະບາຍດີ.doc"])
def test_names_keep_the_vowel_signs_and_accents_of_every_script(name: str) -> None:
    # Devanagari, Tamil, Arabic and Lao write vowels as combining marks: dropping them garbles the word.
    assert safe_name(name) == name


def test_long_names_keep_their_extension() -> None:
    name = safe_name("x" * 300 + ".pdf")
    assert len(name) <= MAX_NAME and name.endswith(".pdf")
    name = safe_name("報告" * 100 + ".pdf")  # bytes count, not characters: the file system limits bytes
    assert len(name.encode()) <= MAX_NAME and name.startswith("報告") and name.endswith(".pdf")


def test_store_writes_inside_the_chat_folder_and_never_clobbers(tmp_path: Path) -> None:
    folder = chat_folder("telegram", "-1001234")
    first = store(tmp_path, folder, "report.pdf", b"one")
    assert first == "attachments/telegram/-1001234/report.pdf" and (tmp_path / first).read_bytes() == b"one"
    assert store(tmp_path, folder, "report.pdf", b"one") == first  # the same file again: reused
    assert store(tmp_path, folder, "report.pdf", b"two") == "attachments/telegram/-1001234/report-2.pdf"
    escaped = store(tmp_path, chat_folder("webhook", "../../outside"), "../x", b"3")
    assert escaped == "attachments/webhook/..%2F..%2Foutside/x"
    assert sorted(p.name for p in (tmp_path / first).parent.iterdir()) == ["report-2.pdf", "report.pdf"]


def test_two_files_stored_at_once_under_one_name_each_keep_their_own(tmp_path: Path, monkeypatch) -> None:
    # The threads of a Slack channel, or the topics of a Telegram group, share the chat's folder and
    # run their turns at once. Each store saw the name free and wrote its file over it: two pasted
    # screenshots, both "image.png", became one, and one thread's model read the other's.
    folder = chat_folder("slack", "C1")
    writing, second_stored = threading.Event(), threading.Event()
    write = attachments.write_whole

    def first_held_until_the_second_is_stored(target, data, **kw):
        if data == b"first":
            writing.set()
            second_stored.wait(WAIT)
        write(target, data, **kw)

    monkeypatch.setattr(attachments, "write_whole", first_held_until_the_second_is_stored)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(store, tmp_path, folder, "image.png", b"first")
        assert writing.wait(WAIT)
        second = store(tmp_path, folder, "image.png", b"second")
        second_stored.set()
        first = first.result(WAIT)
    assert first != second
    assert (tmp_path / first).read_bytes() == b"first" and (tmp_path / second).read_bytes() == b"second"


@pytest.mark.parametrize("chat_id", [".", ".."])
def test_a_chat_id_of_dots_alone_gets_a_folder_of_its_own(tmp_path: Path, chat_id: str) -> None:
    # Kept as it is, "webhook/.." would be the folder holding every platform's chats as this chat's own,
    # and "webhook/." every webhook chat's.
    escaped = "%2E" * len(chat_id)
    assert store(tmp_path, chat_folder("webhook", chat_id), "x", b"1") == f"attachments/webhook/{escaped}/x"
    assert chat_file_scope("webhook", chat_id).own == f"attachments/webhook/{escaped}"


def test_a_stored_file_is_on_disk_for_good_before_the_model_is_told_its_path(tmp_path: Path, fsyncs) -> None:
    # Flushed before its rename, its folder after: else a power cut could lose a file whose path the
    # journaled turn names.
    path = tmp_path / store(tmp_path, chat_folder("telegram", "42"), "report.pdf", b"one")
    assert fsyncs.of(path, path.parent) == [(path, None), (path.parent, {"report.pdf"})]


def test_a_chat_folder_is_named_like_the_chats_memory_file(tmp_path: Path) -> None:
    # One escaping for every per-chat store, so a chat's notes and files sit under the same name.
    long = "route:" + "x" * 300
    assert chat_folder("webhook", long) == f"webhook/{file_name(long)}" and len(file_name(long)) < 110
    scope = chat_file_scope("webhook", "../../etc")
    assert scope.own == "attachments/webhook/..%2F..%2Fetc"
    assert {"attachments/telegram", "attachments/slack", "attachments/webhook", "attachments/local"} \
        <= set(scope.private)
    assert "attachments/my-plugin" in chat_file_scope("my-plugin", "c1").private


async def test_only_chat_sessions_are_kept_to_their_own_files(tmp_path: Path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter("telegram")])
    chat = gateway.host.new_session(platform="telegram", chat_id="42").services["file_scope"]
    assert chat == chat_file_scope("telegram", "42")
    # The operator's own: the terminal chat and `switchboard ask`.
    assert "file_scope" not in gateway.host.new_session(platform="local", chat_id="terminal").services
    assert "file_scope" not in gateway.host.new_session().services


def test_a_symlink_in_the_folder_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    folder = tmp_path / "ws" / "attachments" / "s-1"
    folder.mkdir(parents=True)
    os.symlink(outside, folder / "a.txt")
    assert store(tmp_path / "ws", "s-1", "a.txt", b"new") == "attachments/s-1/a-2.txt"
    assert outside.read_bytes() == b"keep"


# -- the turn's input ----------------------------------------------------------------------------------


async def test_an_image_becomes_an_image_part_for_a_vision_model(tmp_path: Path) -> None:
    prepared = await run(Files({"p1": PNG}), [image("p1")], "what is it?", ws=tmp_path)
    text, part = prepared.content
    assert text == {"type": "text", "text": "what is it?"}
    assert part["type"] == "image_url"
    assert base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) == PNG
    assert prepared.notes == [] and (tmp_path / "attachments/s-1/photo.jpg").read_bytes() == PNG


async def test_without_vision_the_model_gets_the_path_and_a_hint(tmp_path: Path) -> None:
    prepared = await run(Files({"p1": PNG}), [image("p1")], "what is it?", ws=tmp_path, vision=False)
    assert isinstance(prepared.content, str)
    assert "[Image attached at: attachments/s-1/photo.jpg]" in prepared.content
    assert "cannot see these images" in prepared.content


async def test_at_most_eight_images_go_as_parts_the_rest_as_files(tmp_path: Path) -> None:
    files = Files({f"p{i}": PNG + bytes([i]) for i in range(10)})
    prepared = await run(files, [image(f"p{i}", f"img{i}.png") for i in range(10)], ws=tmp_path)
    parts = prepared.content
    assert [p["type"] for p in parts].count("image_url") == 8
    assert "attachments/s-1/img8.png" in parts[0]["text"] and "attachments/s-1/img9.png" in parts[0]["text"]


async def test_a_document_is_listed_with_its_workspace_path(tmp_path: Path) -> None:
    doc = Attachment("document", "notes.txt", "text/plain", 5, "d1")
    prepared = await run(Files({"d1": b"hello"}), [doc], "summarise", ws=tmp_path)
    assert prepared.content.startswith("summarise\n\n[The user sent these files")
    assert "- attachments/s-1/notes.txt (text/plain, 5 bytes)" in prepared.content
    assert (tmp_path / "attachments/s-1/notes.txt").read_text() == "hello"


async def test_too_large_and_failed_files_are_explained_and_nothing_is_stored(tmp_path: Path) -> None:
    big, lost = Attachment("document", "big.zip", None, None, "big"), Attachment("document", "lost.txt", None, None, "?")
    prepared = await run(Files({"big": b"x" * 2048}), [big, lost], "here you go", ws=tmp_path)
    assert prepared.notes == [  # Markdown, as every reply: the names' punctuation escaped
        "big\\.zip is 2.0 KB, which is larger than the 1000 bytes I can take on telegram; please send a smaller file.",
        "I couldn't download lost\\.txt from telegram; please send it again.",
    ]
    assert "[Files the user sent that did not reach you: big.zip (too large); lost.txt (failed)]" in prepared.content
    assert not (tmp_path / "attachments").exists()


async def test_a_size_just_over_the_limit_is_not_shown_as_the_limit_itself(tmp_path: Path) -> None:
    over = Attachment("document", "big.bin", None, None, "big")
    prepared = await run(Files({"big": b"x" * (20 * 1024 * 1024 + 5000)}, cap=20 * 1024 * 1024), [over], ws=tmp_path)
    assert prepared.notes == ["big\\.bin is 20,976,520 bytes, which is larger than the 20,971,520 bytes I can take on"
                              " telegram; please send a smaller file."]


class NotAllowed(Files):
    async def download(self, attachment: Attachment) -> bytes:
        raise Forbidden("Slack sent its sign-in page instead of the file: give the app the files:read scope")


async def test_a_download_the_bot_is_not_allowed_is_no_use_sending_again_and_says_why_in_the_log(
        tmp_path: Path, caplog) -> None:
    doc = Attachment("document", "notes.txt", None, None, "d1")
    with caplog.at_level(logging.INFO, logger="gateway.attachments"):
        prepared = await run(NotAllowed({}), [doc], "read this", ws=tmp_path)
    assert prepared.notes == ["I'm not allowed to download notes\\.txt from telegram; please tell whoever runs me."]
    (line,) = [r for r in caplog.records if "not taken" in r.getMessage()]
    assert line.levelno == logging.WARNING and "files:read scope" in line.getMessage()


class Flaky(Files):
    """Files whose downloads first fail as scripted (``failures[ref]``, in order), each try noted in
    ``tries`` with the time on ``clock`` it began (a clock started at 0)."""

    def __init__(self, files: dict[str, bytes], failures: dict[str, list[DeliveryError]], clock: FakeClock) -> None:
        super().__init__(files)
        self.failures, self.clock = failures, clock
        self.tries: list[tuple[str, float]] = []

    async def download(self, attachment: Attachment) -> bytes:
        self.tries.append((attachment.ref, self.clock.monotonic()))
        if self.failures.get(attachment.ref):
            raise self.failures[attachment.ref].pop(0)
        return await super().download(attachment)


def rate_limited(seconds: float) -> RateLimited:
    return RateLimited("Too Many Requests: retry after 1", retry_after=seconds, method="getFile")


async def test_a_download_the_platform_rate_limits_is_tried_again_after_the_wait_it_asks_for(tmp_path: Path,
                                                                                             caplog) -> None:
    # Telegram's getFile answering 429 "retry after 1" refused the photo at once, lost for that turn,
    # though a second later it came.
    clock = FakeClock(start=0.0)
    files = Flaky({"p1": PNG}, {"p1": [rate_limited(1)]}, clock)
    with caplog.at_level(logging.INFO, logger="gateway.attachments"):
        prepared = await run(files, [image("p1")], "what is it?", ws=tmp_path, clock=clock)
    assert files.tries == [("p1", 0.0), ("p1", 1.0)]
    assert prepared.notes == [] and [part["type"] for part in prepared.content] == ["text", "image_url"]
    assert "telegram attachment (image) not downloaded yet: RateLimited: Too Many Requests: retry after 1; trying" \
           " again in 1.0s" in caplog.messages


async def test_a_download_failing_on_the_network_is_tried_again_a_few_times_then_explained(tmp_path: Path) -> None:
    clock = FakeClock(start=0.0)
    doc = Attachment("document", "notes.txt", None, None, "d1")
    lost = Attachment("document", "lost.txt", None, None, "d2")
    failures = {"d1": [NetworkError("HTTP 502")] * 2, "d2": [NetworkError("connection reset")] * DOWNLOAD_TRIES}
    files = Flaky({"d1": b"hello", "d2": b"never"}, failures, clock)
    prepared = await run(files, [doc, lost], "read these", ws=tmp_path, clock=clock)
    assert files.tries == [("d1", 0.0), ("d1", 0.5), ("d1", 1.5),  # 0.5 s, then twice as long
                           ("d2", 1.5), ("d2", 2.0), ("d2", 3.0), ("d2", 5.0)]
    assert prepared.notes == ["I couldn't download lost\\.txt from telegram; please send it again."]
    assert "notes.txt (unknown type, content is text, unknown size)" in prepared.content
    assert prepared.content.endswith("[Files the user sent that did not reach you: lost.txt (failed)]")


@pytest.mark.parametrize("refusal", [
    AttachmentTooLarge("too large", size=None, limit=1000), NotFound("file_not_found"), Forbidden("missing_scope"),
    BadRequest("Bad Request: wrong file_id"),
])
async def test_a_download_refused_for_good_is_not_tried_again(tmp_path: Path, refusal: DeliveryError) -> None:
    clock = FakeClock(start=0.0)
    files = Flaky({"d1": b"hello"}, {"d1": [refusal]}, clock)
    prepared = await run(files, [Attachment("document", "notes.txt", None, None, "d1")], "x", ws=tmp_path, clock=clock)
    assert files.tries == [("d1", 0.0)] and clock.sleeps == [] and len(prepared.notes) == 1


async def test_the_waits_of_a_messages_files_are_bounded_in_all(tmp_path: Path) -> None:
    # A platform asking for longer than is left is not waited for: the user hears of the file now.
    clock = FakeClock(start=0.0)
    files = Flaky({f"p{i}": PNG + bytes([i]) for i in range(3)},
                  {"p0": [rate_limited(RETRY_WAIT_MAX - 5)], "p1": [rate_limited(10)],
                   "p2": [rate_limited(RETRY_WAIT_MAX + 1)]}, clock)
    prepared = await run(files, [image(f"p{i}", f"img{i}.png") for i in range(3)], ws=tmp_path, clock=clock)
    assert files.tries == [("p0", 0.0), ("p0", RETRY_WAIT_MAX - 5), ("p1", RETRY_WAIT_MAX - 5),
                           ("p2", RETRY_WAIT_MAX - 5)]
    assert prepared.notes == ["I couldn't download img1\\.png from telegram; please send it again.",
                              "I couldn't download img2\\.png from telegram; please send it again."]
    assert [part["type"] for part in prepared.content] == ["text", "image_url"]


async def test_a_stop_ends_the_wait_and_no_further_file_is_downloaded(tmp_path: Path) -> None:
    clock = FakeClock(autojump=False, start=0.0)
    files = Flaky({"p1": PNG, "p2": PNG}, {"p1": [rate_limited(20)]}, clock)
    preparing = asyncio.ensure_future(run(files, [image("p1", "a.png"), image("p2", "b.png")], "look", ws=tmp_path,
                                          clock=clock))
    await clock.until_sleeping()
    preparing.cancel()  # the turn runner's, at /stop, or a newer message interrupting the turn
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(preparing, WAIT)
    assert files.tries == [("p1", 0.0)] and clock.monotonic() == 0.0
    assert not (tmp_path / "attachments").exists()


@pytest.mark.parametrize("in_the_way", ["attachments", "attachments/telegram", "attachments/telegram/42"])
async def test_a_file_in_the_way_of_the_chats_folder_is_explained_and_logged_by_its_path(tmp_path: Path, caplog,
                                                                                          in_the_way: str) -> None:
    # Left there by hand, or by a file tool before tools were kept off the attachments tree.
    (tmp_path / in_the_way).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / in_the_way).write_text("not a folder")
    doc = Attachment("document", "notes.txt", "text/plain", 5, "d1")
    prepared = await prepare(Files({"d1": b"hello"}), "telegram", (doc,), "summarise", workspace=tmp_path,
                             folder=chat_folder("telegram", "42"), supports_vision=True)
    assert prepared.notes == ["I couldn't store notes\\.txt on my side; please tell whoever runs me."]
    assert prepared.content == "summarise\n\n[Files the user sent that did not reach you: notes.txt (not stored)]"
    [error] = [r.getMessage() for r in caplog.records if r.name == "gateway.attachments"]
    assert f"{in_the_way} is in the way: it is not a folder" in error and str(tmp_path) not in error
    assert (tmp_path / in_the_way).read_text() == "not a folder"  # someone's file: left as it is


async def test_with_nothing_left_there_is_no_turn(tmp_path: Path) -> None:
    big = Attachment("document", "big.zip", None, None, "big")
    prepared = await run(Files({"big": b"x" * 2048}), [big], ws=tmp_path)
    assert prepared.content is None and len(prepared.notes) == 1


async def test_voice_without_transcription_is_refused_clearly(tmp_path: Path) -> None:
    voice = Attachment("voice", "voice.ogg", "audio/ogg", 4, "v1")
    prepared = await run(Files({"v1": b"OggS"}), [voice], ws=tmp_path)
    assert prepared == type(prepared)(None, [VOICE_UNSUPPORTED])


async def test_a_transcript_is_the_turns_text(tmp_path: Path) -> None:
    voice = Attachment("voice", "voice.ogg", "audio/ogg", 4, "v1")
    transcriber = Transcriber("book a table for two")
    prepared = await run(Files({"v1": b"OggS"}), [voice], ws=tmp_path, transcriber=transcriber)
    assert prepared.content == "book a table for two" and prepared.notes == []
    assert transcriber.calls == [(b"OggS", "voice.ogg", "audio/ogg")]
    assert not (tmp_path / "attachments").exists()  # the audio itself is not kept


async def test_a_failed_transcription_is_explained(tmp_path: Path) -> None:
    voice = Attachment("voice", "voice.ogg", "audio/ogg", 4, "v1")
    prepared = await run(Files({"v1": b"OggS"}), [voice], ws=tmp_path,
                         transcriber=Transcriber(ModelError("boom", kind="server_error")))
    assert prepared.content is None and prepared.notes == [
        "I couldn't transcribe that voice message; please type it instead."]


def test_attachments_survive_the_inbox_as_json(tmp_path: Path) -> None:
    store_ = GatewayStore(tmp_path / "state.db")
    try:
        event = Inbound("telegram", "42", None, "7", "ann", "look", "u1",
                        attachments=(Attachment("image", "p.jpg", "image/jpeg", 12, "FILE1"),
                                     Attachment("voice", "v.ogg", None, None, "FILE2")))
        assert store_.inbox.accept(event, "t-1").new
        assert store_.inbox.unfinished() == [(event, "t-1")]
    finally:
        store_.close()
