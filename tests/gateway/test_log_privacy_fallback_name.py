"""A file whose name has no letter or digit (``💌``, ``★★★``) is stored as ``file`` (`safe_name`'s fallback):
that word is the gateway's, not the user's, and the log's reason keeps it where it says "file" itself. Written
``<file>`` everywhere, "cannot store files in …" read "cannot store <file>s in …", and Telegram's "the file is
not available yet" "the <file> is not available yet"."""

from __future__ import annotations

import logging
from pathlib import Path

from agent.testing import FakeClock
from gateway.attachments import chat_folder, prepare
from platforms.base import Attachment, NetworkError
from tests.gateway.test_log_privacy import Named, logged

NAME = "💌💌💌"


async def test_a_file_named_without_letters_is_logged_with_the_reason_as_it_was(tmp_path: Path, caplog) -> None:
    (tmp_path / "attachments").mkdir()
    (tmp_path / "attachments" / "telegram").write_text("left here by hand")  # where the chats' folders go
    doc = Attachment("document", NAME, "application/pdf", None, "d1")
    files = Named([NetworkError("getFile named no file path; the file is not available yet", method="getFile")])
    with caplog.at_level(logging.INFO):
        prepared = await prepare(files, "telegram", (doc,), "", workspace=tmp_path,
                                 folder=chat_folder("telegram", "42"), supports_vision=True,
                                 clock=FakeClock(start=0.0))
    assert len(prepared.notes) == 1
    lines = logged(caplog)
    assert any("getFile named no file path; the file is not available yet" in line for line in lines)
    assert any("cannot store files in attachments/telegram/42/" in line for line in lines)
    assert not [line for line in lines if NAME in line]
