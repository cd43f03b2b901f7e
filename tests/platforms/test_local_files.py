"""Where the terminal chat keeps a file the agent sends (`platforms.local_files`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from platforms.base import Outbound, OutboundFile
from platforms.local import LocalAdapter

UNREADABLE = Path("/proc/self/mem")
"""A file that opens but fails its first read (EIO), as a disk failing or filling does midway through a copy."""


@pytest.mark.skipif(not UNREADABLE.exists(), reason="no /proc")
async def test_a_copy_that_fails_midway_leaves_nothing_behind_and_the_retry_keeps_the_name(tmp_path):
    """The copy's target was made before its first byte was copied, and left there when the copy failed: the
    outbox's next try printed ``report-2.csv``, and ``report.csv`` stayed beside it, empty or cut short."""
    sent = tmp_path / "sent"
    adapter = LocalAdapter(input=io.StringIO(), output=io.StringIO(), user="me", files_dir=sent)
    with pytest.raises(OSError):
        await adapter.send_file(Outbound("terminal", None, "Q3"), OutboundFile(str(UNREADABLE), "report.csv", 4))
    assert not list(sent.glob("*"))
    (tmp_path / "copy").write_text("a,b\n")
    await adapter.send_file(Outbound("terminal", None, "Q3"), OutboundFile(str(tmp_path / "copy"), "report.csv", 4))
    assert [p.name for p in sent.glob("*")] == ["report.csv"]
    assert (sent / "report.csv").read_text() == "a,b\n"
