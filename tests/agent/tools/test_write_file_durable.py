"""write_file's text is on disk for good before the model is told it was written: flushed before its
rename, and its folder after, so that a power cut leaves neither an empty file nor the old text."""

from __future__ import annotations

import logging
from pathlib import Path

from agent.tools.file import file_toolset

_, _, WRITE = file_toolset()


async def test_a_written_file_is_flushed_before_its_rename_and_its_folder_after(call, workspace: Path, fsyncs):
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.md").write_text("old")
    assert await call(WRITE, {"path": "notes/a.md", "content": "new"}) == "wrote 3 characters to notes/a.md"
    path = workspace / "notes" / "a.md"
    assert fsyncs.of(path, path.parent) == [(path, None), (path.parent, {"a.md"})]
    assert path.read_text() == "new"


async def test_a_folder_that_cannot_be_flushed_is_logged_and_the_write_reported(call, workspace: Path,
                                                                                folders_not_flushable, caplog):
    with caplog.at_level(logging.WARNING, logger="agent.tools.file"):
        assert await call(WRITE, {"path": "b.md", "content": "text"}) == "wrote 4 characters to b.md"
    assert (workspace / "b.md").read_text() == "text"
    [warning] = [r.getMessage() for r in caplog.records if r.name == "agent.tools.file"]
    assert warning.startswith("write_file: a file is written, but its folder could not be flushed to disk")
    assert "b.md" not in warning  # the model's word, often a user's: at DEBUG only


async def test_the_folders_made_for_a_file_are_flushed_in_the_folders_above_them(call, workspace: Path, fsyncs):
    # Only the file's own folder was flushed: a power cut could take "plans" or "plans/q3", and the file
    # the model was told was written with them.
    assert await call(WRITE, {"path": "plans/q3/a.md", "content": "new"}) == "wrote 3 characters to plans/q3/a.md"
    plans, q3, path = workspace / "plans", workspace / "plans" / "q3", workspace / "plans" / "q3" / "a.md"
    assert fsyncs.of(workspace, plans, q3, path) == [
        (workspace, {"plans"}), (plans, {"q3"}), (path, None), (q3, {"a.md"})]


async def test_a_file_written_into_folders_that_cannot_be_flushed_is_still_written(call, workspace: Path,
                                                                                  folders_not_flushable):
    assert await call(WRITE, {"path": "new/b.md", "content": "text"}) == "wrote 4 characters to new/b.md"
    assert (workspace / "new" / "b.md").read_text() == "text"
