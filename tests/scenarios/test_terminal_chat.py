"""`switchboard chat` (what `make run` starts) driven through its stdin, as a newcomer would."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


async def read_until(stream, needle: str, seen: list[str], timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not any(needle in line for line in seen):
            line = await stream.readline()
            assert line, f"chat ended before printing {needle!r}; saw {seen}"
            seen.append(line.decode())


async def test_chat_delegate_a_list_watch_it_finish_and_quit(tmp_path):
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"),
        "model": {"demo": {"child_steps": 2, "step_seconds": 0.2}},
        "agent": {"gateway_notify_interval": 0.2},
    }))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "--config", str(config), "chat",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=env, cwd=str(tmp_path))
    seen: list[str] = []
    try:
        proc.stdin.write(b"hello\n")
        await proc.stdin.drain()
        await read_until(proc.stdout, "offline demo model", seen)
        proc.stdin.write(b"Compare these:\n- apples\n- pears\n")  # pasted at once: one message
        await proc.stdin.drain()
        await read_until(proc.stdout, "Started 2 subagent", seen)
        await read_until(proc.stdout, "pears: completed", seen)
        assert any("apples: completed" in line for line in seen)
        proc.stdin.write(b"/agents\n")
        await proc.stdin.drain()
        await read_until(proc.stdout, "results delivered", seen)  # the background task and its subagents
        proc.stdin.write(b"/quit\n")
        await proc.stdin.drain()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
