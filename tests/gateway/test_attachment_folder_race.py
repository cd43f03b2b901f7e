"""Chats of one platform store their files at once, each making ``attachments/<platform>/`` if it is not there
yet: one that found it missing, then found it there (another chat made it meanwhile), was told a file was in the
way of its folder, and its photo was not stored (seen as a flaky five-chats-at-once scenario)."""

from __future__ import annotations

from pathlib import Path

from gateway.attachments import _make_folders


def test_a_folder_another_chat_makes_meanwhile_is_no_file_in_the_way(tmp_path, monkeypatch) -> None:
    platform = tmp_path / "attachments" / "telegram"
    real_is_dir = Path.is_dir
    raced: list[bool] = []

    def is_dir(self: Path) -> bool:
        if self == platform and not raced:
            raced.append(True)
            platform.mkdir(parents=True)  # another chat makes it now, right after this one looked
            return False
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    _make_folders(platform / "42")
    assert raced and real_is_dir(platform / "42")
