"""The ids of the files the web chat and the webhook routes keep (`platforms.web_files`): not to be
guessed from what a caller can see, and never removed by a sweep from under a send kept anew."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from platforms.web_files import WebFiles
from tests.platforms.outbox_copies import outbox_copy

KEY = "t-5f1e2d3c4b5a1f:file:0:0"
"""An outbox key: turn ids are a per-process prefix and a counter, so whoever saw one knows the next."""


def sha_id(key: str) -> str:
    """The id a plain hash of the key gives: anyone can work it out."""
    return base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()[:18]).decode("ascii")


async def test_a_sent_files_id_cannot_be_worked_out_from_its_outbox_key(tmp_path: Path) -> None:
    # The id was the SHA-256 of the outbox key, which follows from the turn id: a user who had seen
    # their own turn id could work out the download link of the file sent in the next turn.
    web = WebChatAdapter(files_dir=tmp_path / "web-files")
    sent = await web.send_file(Outbound("c1", None, "", idempotency_key=KEY), outbox_copy(tmp_path, "a.txt", b"a"))
    assert sent.message_id != sha_id(KEY) and len(sent.message_id) == 24
    elsewhere = WebChatAdapter(files_dir=tmp_path / "other-files")
    other = await elsewhere.send_file(Outbound("c1", None, "", idempotency_key=KEY),
                                      outbox_copy(tmp_path, "a.txt", b"a"))
    assert other.message_id != sent.message_id  # each folder's ids have a key of their own
    restarted = WebChatAdapter(files_dir=tmp_path / "web-files")
    again = await restarted.send_file(Outbound("c1", None, "", idempotency_key=KEY),
                                      outbox_copy(tmp_path, "a.txt", b"a"))
    assert again == sent  # the send tried again after a restart still finds its file
    assert (tmp_path / "web-files" / ".id-key").stat().st_mode & 0o077 == 0


FILE_ID = "A" * 24


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_file_kept_anew_while_the_sweep_removes_its_expired_folder_stays(tmp_path: Path) -> None:
    # The sweep read the folder as expired, a send tried again then kept its file anew under the
    # same id (the expired folder replaced whole), and the sweep removed the folder by its name:
    # the new file, its link just announced, was gone.
    clock = Clock()
    outbox = outbox_copy(tmp_path, "new.txt", b"new")

    class Racing(WebFiles):
        raced = True  # from the sweep on

        def _meta(self, folder: Path) -> dict | None:
            meta = WebFiles._meta(folder)  # the sweep's read ...
            if not self.raced and folder.name == FILE_ID:
                self.raced = True
                self.keep("c1", outbox, file_id=FILE_ID)  # ... and the send that lands right after it
            return meta

    files = Racing(tmp_path / "web-files", keep_seconds=60, clock=clock)
    files.keep("c1", outbox_copy(tmp_path, "a.txt", b"old"), file_id=FILE_ID)
    files.raced = False
    clock.now += 60
    assert files.sweep() == 0
    kept = files.find("c1", FILE_ID)
    assert kept is not None and kept.path.read_bytes() == b"new" and kept.time == clock.now
    assert [p.name for p in (tmp_path / "web-files").iterdir()] == [FILE_ID]  # the old folder is gone
