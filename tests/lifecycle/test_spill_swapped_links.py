"""`lifecycle._entries._spill`: a folder on the way to where a subagent's long answer is saved, swapped for a
symlink after `_spill` looked (by ``execute_code``, or anything else writing in the chat's folder), is not
followed: written by path, the answer landed wherever the link led, outside the workspace or in another chat's
folder for its model to read. The parent gets the answer whole, told why it was not saved."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lifecycle._entries import apply_summary_budget
from tests.swaps import disarm, swap_at_next_open

OWN = "attachments/telegram/42"
SPILLED = f"{OWN}/.switchboard/delegation"
ANSWER = "head " + "x" * 5_000 + " tail"


@pytest.fixture(autouse=True)
def disarmed() -> Iterator[None]:
    yield
    disarm()


def swap(folder: Path, to: Path) -> None:
    shutil.rmtree(folder)
    folder.symlink_to(to, target_is_directory=True)


@pytest.mark.parametrize("swapped", [OWN, f"{OWN}/.switchboard", SPILLED])
def test_a_folder_swapped_for_a_link_out_of_the_workspace_after_the_look_receives_nothing(
        tmp_path: Path, swapped: str) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / SPILLED).mkdir(parents=True)
    outside.mkdir()
    # The look (resolving the path) opens nothing: the swap comes right after it, before the first open.
    swap_at_next_open(lambda: swap(workspace / swapped, outside))
    item = apply_summary_budget({"subagent_id": "sa-1", "summary": ANSWER}, 1000, workspace, OWN)
    assert list(outside.rglob("*")) == []
    assert item["summary"] == ANSWER and item["summary_truncated"] is False and item["summary_full_path"] is None
    assert item["summary_not_saved"] == (
        f"given whole, over delegation.max_summary_chars (1000): {SPILLED}/ (or a folder on its way) is a symlink,"
        " and it is saved only in a folder of its own")


def test_a_chat_folder_swapped_for_a_link_to_another_chats_after_the_look_receives_nothing(tmp_path: Path) -> None:
    other = tmp_path / "attachments/telegram/43"
    other.mkdir(parents=True)
    (tmp_path / SPILLED).mkdir(parents=True)
    swap_at_next_open(lambda: swap(tmp_path / OWN, other))
    item = apply_summary_budget({"subagent_id": "sa-1", "summary": ANSWER}, 1000, tmp_path, OWN)
    assert list(other.rglob("*")) == []
    assert item["summary"] == ANSWER and "is a symlink" in item["summary_not_saved"]
