"""gateway.attachments.store: a folder on the way to a chat's folder swapped for a symlink after `store` checked
it (by ``execute_code``, or anything else writing in the workspace) is not followed: written by path, the file
landed wherever the link led, outside the workspace or in another chat's folder. The chat is told its file was
not stored, and the log names the symlink, as for one that was there before the check."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gateway import attachments
from gateway.attachments import chat_folder, prepare, store
from platforms.base import Attachment

OWN = "attachments/telegram/42"


class Files:
    max_attachment_bytes = 1000

    async def download(self, attachment: Attachment) -> bytes:
        return b"hello"


def swapped_after_the_check(monkeypatch, swapped: Path, to: Path) -> list[str]:
    """``swapped`` (a folder) becomes a symlink to ``to`` right after `store`'s check of the chat's folder."""
    real, checked = attachments.resolve_in_workspace, []

    def check_then_swap(workspace: Path, path: str) -> Path:
        resolved = real(workspace, path)
        if not checked:
            checked.append(path)
            shutil.rmtree(swapped)
            swapped.symlink_to(to, target_is_directory=True)
        return resolved

    monkeypatch.setattr(attachments, "resolve_in_workspace", check_then_swap)
    return checked


@pytest.mark.parametrize("swapped", ["attachments", "attachments/telegram", OWN])
async def test_a_folder_swapped_for_a_link_out_of_the_workspace_after_the_check_receives_nothing(
        tmp_path: Path, monkeypatch, caplog, swapped: str) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / OWN).mkdir(parents=True)
    outside.mkdir()
    checked = swapped_after_the_check(monkeypatch, workspace / swapped, outside)
    doc = Attachment("document", "notes.txt", "text/plain", 5, "d1")
    prepared = await prepare(Files(), "telegram", (doc,), "summarise", workspace=workspace,
                             folder=chat_folder("telegram", "42"), supports_vision=True)
    assert checked and list(outside.rglob("*")) == []
    assert prepared.notes == ["I couldn't store notes\\.txt on my side; please tell whoever runs me."]
    assert prepared.content == "summarise\n\n[Files the user sent that did not reach you: notes.txt (not stored)]"
    [error] = [r.getMessage() for r in caplog.records if r.name == "gateway.attachments"]
    assert f"{swapped} is a symlink that leads out of the workspace" in error and str(tmp_path) not in error


def test_a_chat_folder_swapped_for_a_link_to_another_chats_after_the_check_is_not_written_through(
        tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "attachments/telegram/43"
    other.mkdir(parents=True)
    (tmp_path / OWN).mkdir()
    swapped_after_the_check(monkeypatch, tmp_path / OWN, other)
    with pytest.raises(NotADirectoryError) as refused:
        store(tmp_path, chat_folder("telegram", "42"), "secret.txt", b"for 42 only")
    assert str(refused.value) == (f"cannot store files in {OWN}/: {OWN} is a symlink, and a chat's files are"
                                  " stored only in a folder of its own")
    assert list(other.iterdir()) == []


def test_a_file_swapped_for_a_fifo_after_its_look_is_not_read_for_ever(tmp_path: Path, monkeypatch) -> None:
    # The same name again (a replay) is read to compare: a FIFO put in its place since would block that read.
    first = store(tmp_path, chat_folder("telegram", "42"), "a.txt", b"x")
    real_open = os.open

    def fifo_first(path, flags, mode=0o777, *, dir_fd=None):
        if path == "a.txt" and dir_fd is not None and not (tmp_path / first).is_fifo():
            (tmp_path / first).unlink()
            os.mkfifo(tmp_path / first)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", fifo_first)
    assert store(tmp_path, chat_folder("telegram", "42"), "a.txt", b"x") == "attachments/telegram/42/a-2.txt"
