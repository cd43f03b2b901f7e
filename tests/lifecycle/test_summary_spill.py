"""Where the full text of a subagent's answer too long for its parent goes (`lifecycle._entries._spill`):
into the parent chat's own folder only, never through a symlink, written whole and the owner's only; and
when it cannot be saved, the parent gets the answer whole rather than cut with its rest kept nowhere."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from lifecycle._entries import apply_summary_budget

OWN = "attachments/telegram/42"
ANSWER = "head " + "x" * 5_000 + " tail"


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def budget(workspace: Path, folder: str | None = OWN, sid: str = "sa-1") -> dict:
    return apply_summary_budget({"subagent_id": sid, "summary": ANSWER}, 1000, workspace, folder)


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_the_full_text_is_saved_whole_in_the_chats_own_folder_for_its_owner_only(tmp_path):
    item = budget(tmp_path)
    assert item["summary_truncated"] is True and len(item["summary"]) == 1000
    assert item["summary_full_path"] == f"{OWN}/.switchboard/delegation/sa-1.md"
    saved = tmp_path / item["summary_full_path"]
    assert saved.read_text() == ANSWER
    # 0644 in 0755 folders, as the umask made them: a chat's answer, readable by every user of the machine.
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    for folder in (saved.parent, saved.parent.parent, tmp_path / OWN, tmp_path / "attachments"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert [p.name for p in saved.parent.iterdir()] == ["sa-1.md"]  # no temporary left beside it


def test_a_chat_folder_that_links_to_another_chats_receives_nothing_and_the_answer_is_given_whole(tmp_path):
    # The chat's folder made (with execute_code) a symlink to chat 43's: the answer was written into 43's
    # folder, for 43's model to read, and this chat's file tools refuse the path the marker named.
    other = tmp_path / "attachments/telegram/43"
    other.mkdir(parents=True)
    (tmp_path / OWN).symlink_to(other, target_is_directory=True)
    item = budget(tmp_path)
    assert files_under(other) == []
    assert item["summary"] == ANSWER and item["summary_truncated"] is False and item["summary_full_path"] is None
    assert item["summary_original_chars"] == len(ANSWER)
    assert item["summary_not_saved"] == (
        "given whole, over delegation.max_summary_chars (1000): attachments/telegram/42/.switchboard/delegation/"
        " (or a folder on its way) is a symlink, and it is saved only in a folder of its own")
    assert str(tmp_path) not in item["summary_not_saved"]


def test_a_link_out_of_the_workspace_is_not_followed(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / ".switchboard").symlink_to(outside, target_is_directory=True)
    item = budget(workspace, folder=None)
    assert files_under(outside) == []
    assert item["summary"] == ANSWER and "is a symlink" in item["summary_not_saved"]


def test_a_symlink_named_as_the_file_is_replaced_not_written_through(tmp_path):
    folder = tmp_path / OWN / ".switchboard/delegation"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (folder / "sa-1.md").symlink_to(victim)
    item = budget(tmp_path)
    assert victim.read_text() == "keep me"
    assert not (folder / "sa-1.md").is_symlink() and (folder / "sa-1.md").read_text() == ANSWER
    assert item["summary_truncated"] is True


def test_an_answer_that_cannot_be_saved_is_given_whole_not_cut(tmp_path):
    # A file where a folder must be (as a full disk would): the answer was cut to 1000 characters with
    # "the full text could not be saved", and the rest was lost.
    (tmp_path / OWN).mkdir(parents=True)
    (tmp_path / OWN / ".switchboard").write_text("in the way")
    item = budget(tmp_path)
    assert item["summary"] == ANSWER and item["summary_full_path"] is None
    assert item["summary_not_saved"].startswith("given whole, over delegation.max_summary_chars (1000): "
                                                "it could not be saved (")
