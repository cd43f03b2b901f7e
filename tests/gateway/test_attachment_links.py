"""gateway.attachments: a symlink on the way to a chat's folder that leads out of the workspace (made with
execute_code, or by hand) is explained like a file in the way, and the turn goes on with what it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.attachments import chat_folder, prepare
from platforms.base import Attachment


class Files:
    max_attachment_bytes = 1000

    async def download(self, attachment: Attachment) -> bytes:
        return b"hello"


@pytest.mark.parametrize("linked", ["attachments", "attachments/telegram", "attachments/telegram/42"])
async def test_a_symlink_leading_out_of_the_workspace_is_explained_and_nothing_is_stored_there(
        tmp_path: Path, caplog, linked: str) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / linked).parent.mkdir(parents=True, exist_ok=True)
    (workspace / linked).symlink_to(outside)
    doc = Attachment("document", "notes.txt", "text/plain", 5, "d1")
    # Before, resolving the folder raised the file tools' ToolError, which broke the turn.
    prepared = await prepare(Files(), "telegram", (doc,), "summarise", workspace=workspace,
                             folder=chat_folder("telegram", "42"), supports_vision=True)
    assert prepared.notes == ["I couldn't store notes\\.txt on my side; please tell whoever runs me."]
    assert prepared.content == "summarise\n\n[Files the user sent that did not reach you: notes.txt (not stored)]"
    [error] = [r.getMessage() for r in caplog.records if r.name == "gateway.attachments"]
    assert f"{linked} is a symlink that leads out of the workspace" in error and str(tmp_path) not in error
    assert list(outside.rglob("*")) == []
