"""write_file writes a bounded amount: one call at most `MAX_WRITE_BYTES`, one turn's calls together
`MAX_TURN_WRITE_BYTES`, so a model writing in a loop cannot fill the disk the state database is on.
What is refused is written nowhere, and says why; a write that failed does not count."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import AgentSession, ToolRegistry
from agent._errors import ToolError
from agent.models.scripted import ScriptedModel
from agent.tools import file as file_tools
from agent.tools.file import MAX_WRITE_BYTES, file_toolset

_, _, WRITE = file_toolset()


@pytest.mark.parametrize("content", ["x" * (MAX_WRITE_BYTES + 1), "é" * (MAX_WRITE_BYTES // 2 + 1)],
                         ids=["ascii", "two-byte characters"])
async def test_one_write_larger_than_the_bound_is_refused_and_writes_nothing(call, workspace: Path, content):
    (workspace / "big.txt").write_text("old")
    size = len(content.encode())
    with pytest.raises(ToolError) as refused:
        await call(WRITE, {"path": "big.txt", "content": content})
    assert str(refused.value) == (
        f"cannot write 'big.txt': the content is {size:,} bytes (UTF-8), more than the {MAX_WRITE_BYTES:,} one "
        "write_file may write; nothing was written, the file is as it was. Split it over several files")
    assert sorted(p.name for p in workspace.iterdir()) == ["big.txt"]
    assert (workspace / "big.txt").read_text() == "old"


def _session(workspace: Path, writes: list[dict]) -> AgentSession:
    """A session whose model makes ``writes`` (write_file arguments), one an answer, in each turn."""
    def answer(request):
        if request.iteration < len(writes):
            return {"tool_calls": [{"name": "write_file", "arguments": writes[request.iteration]}]}
        return {"text": "done"}

    registry = ToolRegistry()
    registry.register(WRITE)
    return AgentSession(model=ScriptedModel({"parent": answer}), tools=registry.resolve(), workspace=workspace)


def _results(session: AgentSession) -> list[str]:
    return [m["content"] for m in session.messages if m["role"] == "tool"]


async def test_a_turn_writes_a_bounded_amount_and_the_next_turn_as_much(workspace: Path, monkeypatch):
    monkeypatch.setattr(file_tools._WRITTEN, "most", 10)
    (workspace / "folder").mkdir()
    writes = [
        {"path": "a.txt", "content": "1234"},
        {"path": "folder", "content": "123456"},  # fails: does not count
        {"path": "b.txt", "content": "123456"},
        {"path": "c.txt", "content": "1"},
    ]
    session = _session(workspace, writes)
    await session.run_turn("write")
    assert _results(session) == [
        "wrote 4 characters to a.txt",
        "Error: 'folder' is a directory",
        "wrote 6 characters to b.txt",
        "Error: cannot write 'c.txt': this turn has written 10 bytes with write_file, and 1 more would pass the 10 "
        "one turn may write; nothing was written, the file is as it was. Say what is left to write in your final "
        "answer",
    ]
    assert not (workspace / "c.txt").exists()
    await session.run_turn("write again")
    assert _results(session)[4:] == [
        "wrote 4 characters to a.txt", "Error: 'folder' is a directory", "wrote 6 characters to b.txt",
        "Error: cannot write 'c.txt': this turn has written 10 bytes with write_file, and 1 more would pass the 10 "
        "one turn may write; nothing was written, the file is as it was. Say what is left to write in your final "
        "answer",
    ]
