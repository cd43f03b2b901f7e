"""The file tools within a `FileScope`: another owner's folder is refused and left out of listings,
however it is named (``..``, absolute, through a symlink); sessions without a scope see everything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools import FileScope
from agent.tools.file import file_toolset

READ, LIST, WRITE = file_toolset()
SCOPE = {"file_scope": FileScope(private=("files/tg", "files/slack"), own="files/tg/alice")}


async def refusal(call, tool, args, services=SCOPE) -> str:
    with pytest.raises(ToolError) as refused:
        await call(tool, args, services)
    return str(refused.value)


@pytest.fixture
def files(workspace: Path) -> Path:
    for owner in ("tg/alice", "tg/bob", "slack/carol"):
        (workspace / "files" / owner).mkdir(parents=True)
        (workspace / "files" / owner / "note.txt").write_text(f"{owner}'s secret\n")
    (workspace / "files" / "old-session").mkdir()
    (workspace / "files" / "old-session" / "legacy.txt").write_text("from before\n")
    return workspace


async def test_the_own_folder_and_the_rest_of_the_workspace_are_readable(call, files: Path):
    assert await call(READ, {"path": "files/tg/alice/note.txt"}, SCOPE) == "tg/alice's secret\n"
    assert await call(READ, {"path": "files/old-session/legacy.txt"}, SCOPE) == "from before\n"


@pytest.mark.parametrize("path", [
    "files/tg/bob/note.txt",
    "files/tg/alice/../bob/note.txt",
    "./files/slack/carol/note.txt",
    "files/tg/new.txt",  # loose in the divided folder: nobody's to take
])
async def test_another_owners_file_is_refused(call, files: Path, path: str):
    out = await refusal(call, READ, {"path": path})
    assert out.startswith(f"{path!r} is not this session's to use: it is in files/")
    assert "only files/tg/alice/ is this session's" in out and "secret" not in out


async def test_an_absolute_path_is_refused_too(call, files: Path):
    out = await refusal(call, READ, {"path": str(files / "files" / "tg" / "bob" / "note.txt")})
    assert "is not this session's to use: it is in files/tg/" in out


async def test_a_symlink_from_the_own_folder_leads_nowhere(call, files: Path):
    own = files / "files" / "tg" / "alice"
    os.symlink(files / "files" / "tg" / "bob" / "note.txt", own / "link.txt")
    os.symlink(files / "files" / "tg" / "bob", own / "bobs")
    os.symlink(files / "files" / "tg", files / "everyone")  # a link to the divided folder itself
    for path in ("files/tg/alice/link.txt", "files/tg/alice/bobs/note.txt", "everyone/bob/note.txt"):
        assert "is not this session's to use" in await refusal(call, READ, {"path": path})
    assert "is not this session's to use" in await refusal(call, LIST, {"path": "files/tg/alice/bobs"})
    assert "is not this session's to use" in await refusal(call, WRITE, {"path": "files/tg/alice/link.txt",
                                                                         "content": "x"})
    assert (files / "files" / "tg" / "bob" / "note.txt").read_text() == "tg/bob's secret\n"


async def test_writing_into_another_owners_folder_is_refused(call, files: Path):
    out = await refusal(call, WRITE, {"path": "files/tg/bob/planted.txt", "content": "x"})
    assert "is not this session's to use" in out and not (files / "files" / "tg" / "bob" / "planted.txt").exists()
    assert "wrote 1 characters" in await call(WRITE, {"path": "files/tg/alice/mine.txt", "content": "x"}, SCOPE)


async def test_listings_leave_other_owners_out(call, files: Path):
    everything = (await call(LIST, {"path": ".", "pattern": "**"}, SCOPE)).splitlines()
    assert everything == [
        "files/", "files/old-session/", "files/old-session/legacy.txt", "files/slack/", "files/tg/",
        "files/tg/alice/", "files/tg/alice/note.txt",
    ]
    assert await call(LIST, {"path": "files/tg"}, SCOPE) == "files/tg/alice/"
    assert "is not this session's to use" in await refusal(call, LIST, {"path": "files/slack/carol"})


async def test_without_an_own_folder_all_of_a_divided_folder_is_refused(call, files: Path):
    scope = {"file_scope": FileScope(private=("files/tg",))}
    out = await refusal(call, READ, {"path": "files/tg/alice/note.txt"}, scope)
    assert "it is in files/tg/, where other people's files are kept and none of it is this session's" in out


async def test_a_session_without_a_scope_sees_everything(call, files: Path):
    assert await call(READ, {"path": "files/tg/bob/note.txt"}) == "tg/bob's secret\n"
    assert "files/slack/carol/note.txt" in await call(LIST, {"path": ".", "pattern": "**"})


@pytest.mark.parametrize("path", ["files", "files/tg", "files/slack", "files/tg/alice", "files/tg/../slack"])
async def test_the_divided_folders_and_the_own_one_cannot_be_written_as_files(call, workspace: Path, path: str):
    # Before anyone's files arrive, none of these exist yet: a file in their place would stop
    # the host from ever making the folder (every later file of that owner would fail).
    out = await refusal(call, WRITE, {"path": path, "content": "x"})
    assert out.startswith(f"{path!r} cannot be written: it is where the folders of other people's files are kept")
    assert "write inside files/tg/alice/ instead" in out
    assert not (workspace / "files").exists()
    assert "wrote 1 characters" in await call(WRITE, {"path": "files/tg/alice/mine.txt", "content": "x"}, SCOPE)
    assert (workspace / "files" / "tg" / "alice").is_dir()


@pytest.mark.parametrize("path", [
    "FILES/TG/bob/note.txt",
    "Files/tg/bob/note.txt",
    "files/\u017flack/carol/note.txt",  # LONG S, which caseless matching (APFS's too) takes for 's'
    "files/TG/alice/note.txt",  # the own folder, misspelt: another's where case matters
])
async def test_a_divided_folder_named_in_another_case_is_refused(call, files: Path, path: str):
    # On a file system that ignores case (macOS's, Windows' by default) these name the divided
    # folders themselves, and read, list and write other owners' files there.
    assert "is not this session's to use" in await refusal(call, READ, {"path": path})
    assert "is not this session's to use" in await refusal(call, WRITE, {"path": path, "content": "x"})
    assert "is not this session's to use" in await refusal(call, LIST, {"path": path.rsplit("/", 1)[0]})
    assert (files / "files" / "tg" / "bob" / "note.txt").read_text() == "tg/bob's secret\n"


async def test_listings_leave_out_divided_folders_named_in_another_case(call, workspace: Path):
    # Where case matters these are folders of their own; where it does not, the divided folders.
    (workspace / "FILES" / "Tg" / "bob").mkdir(parents=True)
    (workspace / "FILES" / "Tg" / "bob" / "note.txt").write_text("secret\n")
    assert (await call(LIST, {"path": ".", "pattern": "**"}, SCOPE)).splitlines() == ["FILES/", "FILES/Tg/"]


async def test_the_own_folder_is_matched_exactly(call, files: Path):
    # Where case matters, a chat whose id differs from this one's only in case is another chat.
    (files / "files" / "tg" / "ALICE").mkdir()
    (files / "files" / "tg" / "ALICE" / "note.txt").write_text("another alice's secret\n")
    assert "is not this session's to use" in await refusal(call, READ, {"path": "files/tg/ALICE/note.txt"})
    assert await call(READ, {"path": "files/tg/alice/note.txt"}, SCOPE) == "tg/alice's secret\n"


@pytest.mark.parametrize("path", ["FILES", "Files/TG", "files/SLACK"])
async def test_the_divided_folders_cannot_be_written_as_files_in_another_case(call, workspace: Path, path: str):
    out = await refusal(call, WRITE, {"path": path, "content": "x"})
    assert out.startswith(f"{path!r} cannot be written: it is where the folders of other people's files are kept")
    assert list(workspace.iterdir()) == []
