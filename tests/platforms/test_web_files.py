"""Files the agent sends to the web chat, over loopback HTTP without a gateway: the message the
page gets, the download route's checks and headers, how long a file is kept.

Through the gateway (send_file → the page's API → the download) in
tests/scenarios/test_send_file_web.py; the link on the page in tests/scenarios/test_web_chat_browser.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from platforms.base import Accepted, Inbound, NetworkError, Outbound, OutboundFile, SendsFiles
from platforms.web import KEEP_FILES_SECONDS, UPLOAD_LIMIT, WebChatAdapter
from platforms.web_files import WebFiles
from tests.platforms.outbox_copies import outbox_copy
from tests.web_client import EventStream, serve

TOKEN = "tok-0123456789-abcdefghij"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def accept(inbound: Inbound) -> Accepted:
    return Accepted(None, f"web|{inbound.chat_id}|")


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[Any]:
    """``started(**adapter_kwargs)`` -> (adapter, base url), the files under ``tmp_path/web-files``."""
    running: list[tuple[WebChatAdapter, web.AppRunner]] = []

    async def start(**kw: Any) -> tuple[WebChatAdapter, str]:
        adapter = WebChatAdapter(files_dir=tmp_path / "web-files", **kw)
        await adapter.start(accept)
        runner, url = await serve(adapter)
        running.append((adapter, runner))
        return adapter, url

    yield start
    for adapter, runner in running:
        await adapter.stop()
        await runner.cleanup()


async def send(adapter: WebChatAdapter, file: OutboundFile, *, chat: str = "c1", caption: str = "") -> str:
    sent = await adapter.send_file(Outbound(chat, None, caption, kind="interim", idempotency_key="t1:file:0:0"),
                                   file)
    os.unlink(file.path)  # the outbox removes its copy once the send is settled: the download outlives it
    return sent.message_id


def test_takes_files_up_to_a_documented_limit() -> None:
    adapter = WebChatAdapter()
    assert isinstance(adapter, SendsFiles)
    assert adapter.upload_limit("c1") == UPLOAD_LIMIT == 100_000_000
    assert adapter.caption_limit == adapter.text_limit


async def test_a_file_is_a_live_message_with_its_caption_name_and_size_and_downloads_its_bytes(
        started, http, tmp_path) -> None:
    adapter, base = await started(token=TOKEN)
    data = bytes(range(256)) * 40
    async with EventStream(http, base, "c1", headers=AUTH) as stream:
        await stream.until("history")
        file_id = await send(adapter, outbox_copy(tmp_path, "q3.bin", data), caption="**Q3** totals")
        message = await stream.until("message")
    assert message["id"] == file_id and len(file_id) == 24
    assert (message["role"], message["kind"], message["text"]) == ("assistant", "interim", "**Q3** totals")
    assert message["file"] == {"id": file_id, "name": "q3.bin", "size": len(data)}
    async with http.get(f"{base}/chat/api/files/{file_id}", params={"chat": "c1"}, headers=AUTH) as response:
        assert response.status == 200
        assert await response.read() == data
        assert response.headers["Content-Type"] == "application/octet-stream"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.content_disposition is not None and response.content_disposition.type == "attachment"
        assert response.content_disposition.filename == "q3.bin"


async def test_the_download_is_refused_without_the_token_and_never_serves_another_chats_file(
        started, http, tmp_path) -> None:
    adapter, base = await started(token=TOKEN)
    file_id = await send(adapter, outbox_copy(tmp_path, "secret.txt", b"for c1 only"))
    url = f"{base}/chat/api/files/{file_id}"
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
        async with http.get(url, params={"chat": "c1"}, headers=headers) as response:
            assert response.status == 401
            assert response.headers["WWW-Authenticate"] == 'Bearer realm="switchboard"'
    async with http.get(url, params={"chat": "c1"}, headers={**AUTH, "Origin": "https://evil.example"}) as response:
        assert response.status == 403
    for chat, file in (("c2", file_id), ("c1", "A" * 24), ("c1", file_id[:-1] + ".")):
        async with http.get(f"{base}/chat/api/files/{file}", params={"chat": chat}, headers=AUTH) as response:
            assert response.status == 404, (chat, file)
            assert (await response.json())["error"] == "no such file in this chat (sent files are kept 7 days)"
    async with http.get(url, params={"chat": "c1/../c2"}, headers=AUTH) as response:
        assert response.status == 400


async def test_another_signed_in_user_cannot_download_a_users_file(started, http, tmp_path) -> None:
    adapter, base = await started(user_header="X-User", allowed_users=["alice", "bob"])
    file_id = await send(adapter, outbox_copy(tmp_path, "a.txt", b"alice's"), chat="alice:c1")
    url = f"{base}/chat/api/files/{file_id}"
    async with http.get(url, params={"chat": "c1"}, headers={"X-User": "bob"}) as response:
        assert response.status == 404
    async with http.get(url, params={"chat": "c1"}) as response:
        assert response.status == 401
    async with http.get(url, params={"chat": "c1"}, headers={"X-User": "alice"}) as response:
        assert (response.status, await response.read()) == (200, b"alice's")


@pytest.mark.parametrize("name", ['a "quoted" name.txt', "résumé – 東京.pdf", "x; filename=evil.html",
                                  "percent%41.txt", "back\\slash.txt"])
async def test_a_name_with_quotes_unicode_or_semicolons_reaches_the_browser_whole(
        started, http, tmp_path, name) -> None:
    adapter, base = await started()
    file_id = await send(adapter, outbox_copy(tmp_path, name, b"x"))
    async with http.get(f"{base}/chat/api/files/{file_id}", params={"chat": "c1"}) as response:
        assert response.status == 200
        header = response.headers["Content-Disposition"]
        assert header.isascii() and header.count(";") == 2  # the name's own ";" cannot start a parameter
        assert response.content_disposition is not None
        assert response.content_disposition.filename == name  # from filename*, exactly


@pytest.mark.parametrize(("name", "content_type"), [
    ("page.html", "application/octet-stream"), ("logo.svg", "application/octet-stream"),
    ("feed.xml", "application/octet-stream"), ("PAGE.HTM", "application/octet-stream"),
    ("noext", "application/octet-stream"), ("chart.png", "image/png"), ("notes.txt", "text/plain"),
    ("report.pdf", "application/pdf")])  # fmt: skip
async def test_only_types_that_cannot_run_script_in_the_page_are_served_as_themselves(
        started, http, tmp_path, name, content_type) -> None:
    adapter, base = await started()
    file_id = await send(adapter, outbox_copy(tmp_path, name, b"<script>alert(1)</script>"))
    async with http.get(f"{base}/chat/api/files/{file_id}", params={"chat": "c1"}) as response:
        assert response.headers["Content-Type"] == content_type
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
        assert response.content_disposition is not None and response.content_disposition.type == "attachment"


async def test_a_file_is_kept_as_long_as_messages_then_expires_and_is_removed(started, http, tmp_path) -> None:
    clock = Clock()
    history: list[dict[str, Any]] = []
    adapter, base = await started(clock=clock, history_reader=lambda chat_id, limit: [dict(m) for m in history])
    file_id = await send(adapter, outbox_copy(tmp_path, "old.txt", b"old"), caption="here")
    history.append({"id": file_id, "role": "assistant", "kind": "interim", "text": "here", "time": clock.now,
                    "edited": False, "file": True})  # as the gateway's store reads it back
    url = f"{base}/chat/api/files/{file_id}"

    async def shown_file() -> dict[str, Any]:
        async with http.get(f"{base}/chat/api/history", params={"chat": "c1"}) as response:
            return (await response.json())["messages"][0]["file"]

    clock.now += KEEP_FILES_SECONDS - 1
    assert await shown_file() == {"id": file_id, "name": "old.txt", "size": 3}
    assert adapter.files.sweep() == 0
    clock.now += 1
    assert await shown_file() == {"expired": True}
    async with http.get(url, params={"chat": "c1"}) as response:
        assert response.status == 404
    left = tmp_path / "web-files" / ".crashed.tmp"  # a copy a crash left half-made, an hour ago
    left.mkdir()
    os.utime(left, (clock.now - 3601, os.stat(left).st_mtime - 3601))
    assert adapter.files.sweep() == 2
    assert [p.name for p in (tmp_path / "web-files").iterdir()] == [".id-key"]  # the ids' key stays


async def test_a_send_tried_again_after_a_restart_keeps_one_file_and_publishes_the_same_message(
        started, http, tmp_path) -> None:
    # Each try kept another copy under a new random id: the page that saw the first try linked a
    # file the history never showed, and the copy stayed on disk for seven days.
    part = Outbound("c1", None, "the report", kind="interim", idempotency_key="t1:file:0:0")
    before, base = await started(token=TOKEN)
    async with EventStream(http, base, "c1", headers=AUTH) as stream:
        await stream.until("history")
        first = await before.send_file(part, outbox_copy(tmp_path, "r.csv", b"once"))
        shown = await stream.until("message")
    await before.stop()  # the process died before the outbox recorded the send: its copy is still there
    after, base = await started(token=TOKEN)
    async with EventStream(http, base, "c1", headers=AUTH) as stream:
        await stream.until("history")
        again = await after.send_file(part, outbox_copy(tmp_path, "r.csv", b"once"))
        assert await stream.until("message") == shown
    assert again == first and shown["id"] == first.message_id
    assert {p.name for p in (tmp_path / "web-files").iterdir()} == {".id-key", first.message_id}
    async with http.get(f"{base}/chat/api/files/{first.message_id}", params={"chat": "c1"}, headers=AUTH) as response:
        assert (response.status, await response.read()) == (200, b"once")
    other = await after.send_file(Outbound("c1", None, "", idempotency_key="t1:file:1:0"),
                                  outbox_copy(tmp_path, "next.csv", b"x"))
    assert other.message_id != first.message_id  # the turn's next file is another one
    unkeyed = [await after.send_file(Outbound("c1", None, ""), outbox_copy(tmp_path, f"{n}.csv", b"x")) for n in "ab"]
    assert unkeyed[0] != unkeyed[1]  # without a key nothing says two sends are one: each is kept


def test_an_expired_file_asked_for_again_is_replaced_whole(tmp_path) -> None:
    clock = Clock()
    files = WebFiles(tmp_path / "web-files", keep_seconds=60, clock=clock)
    old = files.keep("c1", outbox_copy(tmp_path, "a.txt", b"old"), file_id="A" * 24)
    clock.now += 60
    assert files.find("c1", old.id) is None
    new = files.keep("c1", outbox_copy(tmp_path, "a.txt", b"new"), file_id=old.id)
    assert files.find("c1", old.id) == new and new.time == clock.now and new.path.read_bytes() == b"new"
    assert [p.name for p in (tmp_path / "web-files").iterdir()] == [old.id]  # the old folder is gone too


async def test_a_file_that_cannot_be_kept_is_a_network_error_the_outbox_retries(started, tmp_path) -> None:
    adapter, _ = await started()
    shutil.rmtree(tmp_path / "web-files")  # made at start, for the pages' name (`WebChatAdapter._scope`)
    (tmp_path / "web-files").write_text("in the way")  # a full disk, say: nothing can be written there
    with pytest.raises(NetworkError, match="cannot keep the file for the web chat"):
        await adapter.send_file(Outbound("c1", None, ""), outbox_copy(tmp_path, "a.txt", b"a"))


def test_a_kept_file_is_in_its_folder_on_disk_before_the_folder_is_renamed_into_place(tmp_path, fsyncs) -> None:
    # The folder's own names were not flushed before its rename: after a power cut the renamed
    # folder could come back without the file the message links to, or without its meta.json.
    kept = WebFiles(tmp_path / "web-files", keep_seconds=60).keep("c1", outbox_copy(tmp_path, "a.txt", b"a"))
    folder = kept.path.parent
    assert fsyncs.of(folder / "meta.json", folder, folder.parent) == [
        (folder / "meta.json", None), (folder, {kept.path.name, "meta.json"}), (folder.parent, {kept.id})]


@pytest.mark.usefixtures("folders_not_flushable")
def test_a_file_is_kept_where_the_file_system_flushes_no_folders(tmp_path, caplog) -> None:
    # Its folder could not be flushed (EINVAL): every file sent to the web chat failed as a network
    # error, retried until the outbox gave up.
    files = WebFiles(tmp_path / "web-files", keep_seconds=60)
    kept = files.keep("c1", outbox_copy(tmp_path, "a.txt", b"a"))
    assert kept.path.read_bytes() == b"a" and files.find("c1", kept.id) == kept
    assert "could not be flushed" in caplog.text
