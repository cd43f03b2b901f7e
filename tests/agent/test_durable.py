"""agent._durable: a file written whole, replacing the old one, or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent._durable import write_whole


def test_the_new_file_replaces_the_old_whole_and_lasts(tmp_path: Path, fsyncs) -> None:
    target = tmp_path / "notes.json"
    target.write_bytes(b"old")
    write_whole(target, b"new", temporary=tmp_path / ".notes.json.1.tmp", mode=0o600)
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["notes.json"]
    assert target.stat().st_mode & 0o777 == 0o600
    # The bytes are flushed before the rename, the folder (the rename) after it.
    assert fsyncs.of(target, tmp_path) == [(target, None), (tmp_path, {"notes.json"})]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # nothing can be renamed over a folder
    with pytest.raises(IsADirectoryError):
        write_whole(target, b"new", temporary=tmp_path / ".taken.tmp")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_a_temporary_that_exists_is_someone_elses_and_is_left_alone(tmp_path: Path) -> None:
    theirs = tmp_path / ".notes.json.1.tmp"
    theirs.write_bytes(b"being written")
    with pytest.raises(FileExistsError):
        write_whole(tmp_path / "notes.json", b"new", temporary=theirs)
    assert theirs.read_bytes() == b"being written" and not (tmp_path / "notes.json").exists()
