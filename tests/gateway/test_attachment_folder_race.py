"""Chats of one platform store their files at once, each making ``attachments/<platform>/`` if it is not there
yet: one that found it missing, then found it there (another chat made it meanwhile), was told a file was in the
way of its folder, and its photo was not stored (seen as a flaky five-chats-at-once scenario)."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.attachments import chat_folder, store


def test_a_folder_another_chat_makes_meanwhile_is_no_file_in_the_way(tmp_path, monkeypatch) -> None:
    platform = tmp_path / "attachments" / "telegram"
    real_mkdir = os.mkdir
    raced: list[bool] = []

    def mkdir(path, mode=0o777, *, dir_fd=None) -> None:
        if path == "telegram" and not raced:
            raced.append(True)
            platform.mkdir(parents=True)  # another chat makes it now, right after this one found it missing
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    stored = store(tmp_path, chat_folder("telegram", "42"), "photo.jpg", b"x")
    assert raced and stored == "attachments/telegram/42/photo.jpg" and Path(tmp_path / stored).read_bytes() == b"x"
