"""gateway.attachments.store: a chat's folder that is a symlink inside the workspace (to another
chat's folder) is not written through: the files would land in the other chat's folder, for its model
to read. The chat is told its file was not stored, as for one that leads out of the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.attachments import chat_folder, store


def test_a_chat_folder_that_links_to_another_chats_is_not_written_through(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    other = ws / "attachments" / chat_folder("telegram", "43")
    other.mkdir(parents=True)
    os.symlink(other, ws / "attachments" / chat_folder("telegram", "42"))
    with pytest.raises(NotADirectoryError) as refused:
        store(ws, chat_folder("telegram", "42"), "secret.txt", b"for 42 only")
    assert str(refused.value) == ("cannot store files in attachments/telegram/42/: attachments/telegram/42 is a "
                                  "symlink, and a chat's files are stored only in a folder of its own")
    assert os.listdir(other) == []


def test_a_platform_folder_that_links_to_another_platforms_is_not_written_through(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "attachments" / "slack").mkdir(parents=True)
    os.symlink(ws / "attachments" / "slack", ws / "attachments" / "telegram")
    with pytest.raises(NotADirectoryError, match="attachments/telegram is a symlink"):
        store(ws, chat_folder("telegram", "42"), "secret.txt", b"for 42 only")
    assert os.listdir(ws / "attachments" / "slack") == []
