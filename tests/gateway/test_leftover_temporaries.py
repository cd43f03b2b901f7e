"""Temporary files a process killed mid-write left behind (an attachment's ``.part``, a memory
file's ``.tmp``) are removed when the real `switchboard run` starts, holding the state lock: only
those names, only in the attachments and memory folders; everything else stays."""

from __future__ import annotations

import os
from pathlib import Path

from tests.gateway.cli_process import Running, write_config

HEX = "0123456789abcdef" * 2


def make(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"half written")
    return path


def test_a_start_removes_the_temporary_files_a_killed_process_left(tmp_path):
    state = tmp_path / "state"
    attachments, memory = state / "workspace" / "attachments", state / "memory"
    left = [
        make(attachments / "telegram" / "42" / f".photo.jpg.{HEX}.part"),
        make(attachments / "s-legacy" / f".notes.txt.{HEX}.part"),  # a folder from before chats had their own
        make(memory / "slack" / ".C1.json.k3_x9q0a.tmp"),
        make(memory / ".ask.json.abcdefgh.tmp"),
        make(state / ".memory.json.0a1b2c3d.tmp"),
    ]
    kept = [
        make(attachments / "telegram" / "42" / "photo.jpg"),
        make(attachments / "telegram" / "42" / ".photo.jpg.not-ours.part"),
        make(memory / "slack" / "C1.json"),
        make(memory / ".C1.json.tmp"),
        make(state / "workspace" / f".report.txt.{HEX}.part"),  # the model's own file, outside attachments
        make(state / "workspace" / "notes" / ".todo.json.abcdefgh.tmp"),
    ]
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(state), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "leftover-secret-0"}}}},
    })
    with Running(tmp_path, "--config", str(config)).started() as gateway:
        line = gateway.wait_for(r".*removed 5 temporary files.*").group(0)
        assert [p for p in left if os.path.lexists(p)] == []
        assert [p for p in kept if not p.exists()] == []
    assert "attachments" in line and "memory" in line
