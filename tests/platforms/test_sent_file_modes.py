"""The files the agent sends a chat are kept its owner's only, whatever the umask: the web chat's (and webhook
routes') downloads and their ``meta.json``, and what the terminal chat receives (``sent-files/``), as the
outbox's copies and the attachments people send are (tests/gateway/test_outbox_copy_hygiene.py)."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from platforms.base import Outbound, OutboundFile
from platforms.local import LocalAdapter
from platforms.local_files import keep
from platforms.web_files import WebFiles

SHM = Path("/dev/shm")


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    """systemd's and Docker's umask, which leaves a file opened without a mode readable by everyone."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A folder on another file system than ``tmp_path``: no hard link reaches across, so `WebFiles.keep` copies."""
    if not SHM.is_dir() or SHM.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system to copy from")
    folder = Path(tempfile.mkdtemp(dir=SHM))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_web_download_copied_rather_than_linked_and_its_meta_are_the_owners_only(tmp_path, elsewhere):
    # Copied where no hard link could be made, the file and its meta.json were 0644: every user of the
    # machine could read what the agent sent a chat, and its name, once the folder was not 0700.
    source = elsewhere / "report.csv"
    source.write_bytes(b"a,b\n")
    source.chmod(0o600)
    files = WebFiles(tmp_path / "web-files", keep_seconds=3600)
    kept = files.keep("chat-1", OutboundFile(str(source), "report.csv", 4), key="send-1")
    assert kept.path.read_bytes() == b"a,b\n" and kept.path.stat().st_ino != source.stat().st_ino
    assert mode(kept.path) == 0o600
    assert mode(kept.path.parent / "meta.json") == 0o600
    assert mode(kept.path.parent) == 0o700 and mode(tmp_path / "web-files") == 0o700
    assert files.find("chat-1", kept.id) == kept  # still read back as before


def test_a_linked_web_download_keeps_its_meta_the_owners_only(tmp_path):
    source = tmp_path / "outbox-files" / "k" / "photo.png"
    source.parent.mkdir(parents=True)
    source.write_bytes(b"png")
    source.chmod(0o600)
    kept = WebFiles(tmp_path / "web-files", keep_seconds=3600).keep("c", OutboundFile(str(source), "photo.png", 3))
    assert mode(kept.path.parent / "meta.json") == 0o600 and mode(kept.path) == 0o600


async def test_a_file_the_terminal_chat_receives_is_the_owners_only(tmp_path):
    # `keep` made sent-files/ 0755 and each copy 0644, where the outbox's own copy of it was 0600.
    (tmp_path / "copy").write_text("a,b\n")
    sent = tmp_path / "state" / "sent-files"
    adapter = LocalAdapter(input=io.StringIO(), output=io.StringIO(), user="me", files_dir=sent)
    await adapter.send_file(Outbound("terminal", None, "Q3"), OutboundFile(str(tmp_path / "copy"), "report.csv", 4))
    await adapter.send_file(Outbound("terminal", None, "Q3"), OutboundFile(str(tmp_path / "copy"), "report.csv", 4))
    assert sorted(p.name for p in sent.iterdir()) == ["report-2.csv", "report.csv"]
    assert mode(sent) == 0o700
    assert mode(sent / "report.csv") == 0o600 and mode(sent / "report-2.csv") == 0o600


def test_the_terminal_copy_never_writes_over_a_file_already_there(tmp_path):
    (tmp_path / "new").write_text("new")
    (tmp_path / "report.csv").write_text("old")
    (tmp_path / "report.csv").chmod(0o644)
    assert keep(tmp_path / "new", tmp_path / "report.csv") == (tmp_path / "report-2.csv").resolve()
    assert (tmp_path / "report.csv").read_text() == "old" and mode(tmp_path / "report.csv") == 0o644
    assert (tmp_path / "report-2.csv").read_text() == "new"
