"""Project context files are read off the loop, once for a burst of children."""

from __future__ import annotations

import asyncio

from lifecycle import _project_context
from lifecycle._project_context import ProjectContext


async def test_children_starting_together_share_one_read(tmp_path, monkeypatch):
    (tmp_path / "AGENTS.md").write_text("Run the tests before you stop.")
    reads = []
    real = _project_context.read_context_files

    def counting(workspace):
        reads.append(workspace)
        return real(workspace)

    monkeypatch.setattr(_project_context, "read_context_files", counting)
    context = ProjectContext()
    sections = await asyncio.gather(*(context.section(tmp_path) for _ in range(50)))
    assert len(reads) == 1 and len(set(sections)) == 1
    assert "PROJECT CONTEXT (AGENTS.md)" in sections[0] and "Run the tests" in sections[0]
    assert await context.section(tmp_path) == sections[0] and len(reads) == 1


async def test_one_caller_giving_up_does_not_cancel_the_shared_read(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Be brief.")
    context = ProjectContext()
    first = asyncio.ensure_future(context.section(tmp_path))
    second = asyncio.ensure_future(context.section(tmp_path))
    await asyncio.sleep(0)
    first.cancel()
    assert "Be brief." in await second
