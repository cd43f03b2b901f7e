"""The sweep a gateway's start makes of memory temporary files (`remove_temporaries`) leaves the one of
a save under way in another process: a ``switchboard ask`` takes no state directory lock, so it may be
saving a note beside a gateway that starts, and a temporary file removed under it failed its save."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from agent.tools.memory import remove_temporaries
from tests.capped_writes import ROOT

SAVE_PAUSED_BEFORE_RENAME = """
import os, sys
from pathlib import Path
from agent._tools import ToolContext
from agent.tools.memory import memory
rename = os.replace
def paused(*args, **kwargs):  # the note is written to its temporary file: the sweep comes now
    print("written", flush=True)
    sys.stdin.readline()
    return rename(*args, **kwargs)
os.replace = paused
ctx = ToolContext(None, "call-1", Path("."), {"memory_path": sys.argv[1]})
try:
    print(memory({"action": "add", "text": "asked beside a gateway"}, ctx), flush=True)
except Exception as exc:
    print(exc, flush=True)
"""


def test_a_save_under_way_in_another_process_keeps_its_temporary_file(tmp_path: Path):
    memory = tmp_path / "memory"
    path = memory / "ask.json"
    left = memory / "slack" / ".C1.json.0a1b2c3d.tmp"  # a killed process's: its lock is free
    left.parent.mkdir(parents=True)
    left.write_text("half saved")
    asker = subprocess.Popen([sys.executable, "-c", SAVE_PAUSED_BEFORE_RENAME, str(path)], cwd=ROOT, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert asker.stdout.readline() == "written\n"
        removed = remove_temporaries(memory)
        asker.stdin.write("go on\n")
        asker.stdin.flush()
        # Not "the memory file cannot be written (No such file or directory); nothing was changed".
        assert asker.stdout.readline() == "added note 1\n"
        assert asker.wait(timeout=50) == 0
    finally:
        asker.kill()
        asker.wait()
        asker.stdout.close()
        asker.stdin.close()
    assert removed == [left]
    assert "asked beside a gateway" in path.read_text()
    assert sorted(p.name for p in memory.iterdir()) == [".ask.json.lock", "ask.json", "slack"]


def test_a_temporary_file_goes_once_its_notes_file_lock_is_free(tmp_path: Path):
    path = tmp_path / "memory.json"
    left = tmp_path / ".memory.json.k3_x9q0a.tmp"
    left.write_text("half saved")
    fd = os.open(tmp_path / ".memory.json.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a save in this process's other thread holds it
        assert remove_temporaries(tmp_path, below=False) == []
        assert left.exists() and not path.exists()
    finally:
        os.close(fd)
    assert remove_temporaries(tmp_path, below=False) == [left]
    assert not left.exists()
