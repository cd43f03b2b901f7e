"""Project context files a child working in a repository must follow."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

log = logging.getLogger("lifecycle.project_context")

CONTEXT_FILES = (".switchboard.md", "AGENTS.md", "CLAUDE.md", ".cursorrules")
MAX_FILE_CHARS = 20_000
_TTL_SECONDS = 5.0  # a burst of children shares one read; an edited file shows up within seconds


class ProjectContext:
    """Reads the context files of a workspace off the event loop, cached briefly.

    Children launched together share one read: a miss stores the reading task
    itself, so a thousand children starting at once cost one trip to a thread,
    not a thousand.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[float, asyncio.Task[str]]] = {}

    def cached(self, workspace: str) -> str | None:
        """The section for ``workspace`` when a fresh read is at hand (no await needed), else None."""
        entry = self._cache.get(workspace)
        if entry is None or time.monotonic() - entry[0] >= _TTL_SECONDS:
            return None
        task = entry[1]
        return task.result() if task.done() and not task.cancelled() else None

    async def section(self, workspace: str | Path) -> str:
        """The system-prompt section for ``workspace``, or "" when it has no context files."""
        workspace = str(workspace)
        cached = self._cache.get(workspace)
        now = time.monotonic()
        loop = asyncio.get_running_loop()
        if cached is None or now - cached[0] >= _TTL_SECONDS or cached[1].get_loop() is not loop:
            task = loop.create_task(asyncio.to_thread(read_context_files, Path(workspace)))
            cached = self._cache[workspace] = (now, task)
        task = cached[1]
        if task.done():
            return task.result()
        # Shielded: one caller being cancelled must not cancel the read the others wait for.
        return await asyncio.shield(task)


def read_context_files(workspace: Path) -> str:
    parts = []
    for name in CONTEXT_FILES:
        path = workspace / name
        try:
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("cannot read project context file %s: %s", path, exc)
            continue
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[... {name} cut at {MAX_FILE_CHARS} characters]"
        parts.append(f"PROJECT CONTEXT ({name}) — follow these rules of the repository:\n{text.strip()}")
    return "\n\n".join(parts)
