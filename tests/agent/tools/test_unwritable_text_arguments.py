"""Text holding a lone surrogate (JSON's ``"\\ud83d"`` alone, half an emoji: a Python str, but no UTF-8)
is refused by ``write_file`` and the memory tool as a tool error saying so and where, changing nothing:
it was an unexpected UnicodeEncodeError, logged with its traceback, that told the model nothing useful."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools.file import file_toolset
from agent.tools.memory import memory_toolset

WRITE = next(t for t in file_toolset() if t.name == "write_file")
(MEMORY,) = memory_toolset()
HALF = json.loads('"ok \\ud83d"')  # as a model's arguments carry it


async def test_write_file_refuses_a_lone_surrogate_and_leaves_the_file_as_it_was(call, workspace: Path):
    (workspace / "notes.md").write_text("before")
    with pytest.raises(ToolError) as refused:
        await call(WRITE, {"path": "notes.md", "content": "x" * 70_000 + HALF})
    assert str(refused.value) == ("cannot write 'notes.md': the content holds a lone surrogate (half of a UTF-16 pair, "
                                  "at character 70004), which is no UTF-8 text; nothing was written, the file is as "
                                  "it was")
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.md"]  # no temporary file left
    assert (workspace / "notes.md").read_text() == "before"


async def test_a_note_with_a_lone_surrogate_is_refused_and_the_notes_kept(call, workspace: Path):
    services = {"memory_path": str(workspace / "memory.json")}
    assert await call(MEMORY, {"action": "add", "text": "likes tea"}, services) == "added note 1"
    with pytest.raises(ToolError) as refused:
        await call(MEMORY, {"action": "add", "text": HALF}, services)
    assert str(refused.value) == ("the note holds a lone surrogate (half of a UTF-16 pair, at character 4), which is "
                                  "no UTF-8 text; nothing was added")
    assert await call(MEMORY, {"action": "list"}, services) == "[1] likes tea"


async def test_a_note_removed_by_an_id_written_as_a_float_is_named_as_a_whole_number(call, workspace: Path):
    # Not a surrogate, but the same kind of argument the schema lets through: "integer" takes 2.0.
    services = {"memory_path": str(workspace / "memory.json")}
    await call(MEMORY, {"action": "add", "text": "likes tea"}, services)
    assert await call(MEMORY, {"action": "remove", "id": 1.0}, services) == "removed note 1"
    with pytest.raises(ToolError, match=r"^there is no note 1$"):
        await call(MEMORY, {"action": "remove", "id": 1.0}, services)
