"""A session's own folder that is a symlink (or has one on its way) is none of its own: resolved, it
would be the folder the link names, another owner's, whose files the session could then read and write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools import FileScope
from agent.tools.file import file_toolset

READ, LIST, WRITE = file_toolset()
SCOPE = {"file_scope": FileScope(private=("files/tg", "files/slack"), own="files/tg/alice")}


@pytest.fixture
def files(workspace: Path) -> Path:
    for owner in ("tg/bob", "slack/alice"):
        (workspace / "files" / owner).mkdir(parents=True)
        (workspace / "files" / owner / "note.txt").write_text(f"{owner}'s secret\n")
    return workspace


async def refusal(call, tool, args) -> str:
    with pytest.raises(ToolError) as refused:
        await call(tool, args, SCOPE)
    return str(refused.value)


async def test_an_own_folder_that_is_a_link_to_another_owners_leads_to_none_of_its_files(call, files: Path):
    os.symlink(files / "files" / "tg" / "bob", files / "files" / "tg" / "alice")  # made with execute_code, say
    for tool, args in ((READ, {"path": "files/tg/alice/note.txt"}), (LIST, {"path": "files/tg/alice"}),
                       (WRITE, {"path": "files/tg/alice/note.txt", "content": "mine now"})):
        out = await refusal(call, tool, args)
        assert "is not this session's to use" in out and "it is a symlink" in out and "secret" not in out
    assert "bob" not in await call(LIST, {"path": "files", "pattern": "**"}, SCOPE)
    assert (files / "files" / "tg" / "bob" / "note.txt").read_text() == "tg/bob's secret\n"


async def test_a_link_on_the_way_to_the_own_folder_leads_to_none_either(call, files: Path):
    # files/tg a link to files/slack: files/tg/alice is then slack's alice, another person.
    os.rename(files / "files" / "tg", files / "tg-before")
    os.symlink(files / "files" / "slack", files / "files" / "tg")
    out = await refusal(call, READ, {"path": "files/tg/alice/note.txt"})
    assert "is not this session's to use" in out and "secret" not in out


async def test_a_real_own_folder_stays_the_sessions(call, files: Path):
    (files / "files" / "tg" / "alice").mkdir()
    assert await call(WRITE, {"path": "files/tg/alice/a.txt", "content": "hi"}, SCOPE) == "wrote 2 characters to " \
        "files/tg/alice/a.txt"
    assert await call(READ, {"path": "files/tg/alice/a.txt"}, SCOPE) == "hi"
    assert await call(LIST, {"path": "files/tg/alice"}, SCOPE) == "files/tg/alice/a.txt"
