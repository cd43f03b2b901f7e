"""write_file's log at INFO and above names no path: the path is the model's word, often a user's (a report
named for a person), and the operator's log is often shipped where many read it."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from agent import _durable
from agent.tools.file import file_toolset

_, _, WRITE = file_toolset()
NAME = "letter to Ana Souza.md"


async def test_what_a_crash_left_is_removed_and_logged_by_count(call, workspace: Path, caplog) -> None:
    left = workspace / f".write_file.{'0' * 32}.part"  # a write a crash cut short before its rename
    left.write_text("half way")
    old = time.time() - _durable.LEFTOVER_SECONDS - 60
    os.utime(left, (old, old))
    with caplog.at_level(logging.INFO):
        assert await call(WRITE, {"path": NAME, "content": "Dear Ana"}) == f"wrote 8 characters to {NAME}"
    assert not left.exists()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any("removed 1 temporary file(s)" in line for line in lines)
    assert not [line for line in lines if "Souza" in line]
