"""gateway.attachments: the folders and files of what people send are the gateway's user's alone,
whatever the umask (systemd's and Docker's default, 0022, made them 0755 and 0644)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.attachments import chat_folder, store


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_folder_store_makes_is_0700_and_every_file_0600(tmp_path: Path, usual_umask: None) -> None:
    stored = store(tmp_path, chat_folder("telegram", "-1001234"), "passport.jpg", b"\xff\xd8private")
    assert stored == "attachments/telegram/-1001234/passport.jpg"
    for folder in ("attachments", "attachments/telegram", "attachments/telegram/-1001234"):
        assert mode(tmp_path / folder) == 0o700, folder
    assert mode(tmp_path / stored) == 0o600
    # A second chat's folder beside the first, and a second name in it (``-2``), alike.
    other = store(tmp_path, chat_folder("telegram", "42"), "passport.jpg", b"other")
    again = store(tmp_path, chat_folder("telegram", "42"), "passport.jpg", b"changed")
    assert mode(tmp_path / "attachments/telegram/42") == 0o700
    assert [mode(tmp_path / p) for p in (other, again)] == [0o600, 0o600]


def test_a_folder_already_there_keeps_its_mode(tmp_path: Path, usual_umask: None) -> None:
    # The operator's choice (or an older version's 0755, which `chmod -R go=` tightens): not changed behind them.
    (tmp_path / "attachments").mkdir(mode=0o750)
    stored = store(tmp_path, chat_folder("slack", "C1"), "notes.txt", b"x")
    assert mode(tmp_path / "attachments") == 0o750
    assert mode(tmp_path / "attachments/slack") == mode(tmp_path / "attachments/slack/C1") == 0o700
    assert mode(tmp_path / stored) == 0o600


@pytest.mark.parametrize("in_the_way", ["attachments", "attachments/telegram", "attachments/telegram/7"])
def test_a_file_in_the_way_of_a_folder_is_named(tmp_path: Path, in_the_way: str) -> None:
    (tmp_path / in_the_way).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / in_the_way).write_text("not a folder")
    with pytest.raises(NotADirectoryError, match=f"{in_the_way} is in the way: it is not a folder"):
        store(tmp_path, chat_folder("telegram", "7"), "a.txt", b"x")
    assert (tmp_path / in_the_way).read_text() == "not a folder"
