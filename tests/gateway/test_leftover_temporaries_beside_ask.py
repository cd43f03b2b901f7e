"""`switchboard run` starting while a ``switchboard ask`` (which takes no state lock) saves a note: the
start's sweep of memory temporary files leaves the one of that save, whose notes file's lock is held."""

from __future__ import annotations

import fcntl
import os

from tests.gateway.cli_process import Running, write_config


def test_a_start_leaves_the_temporary_file_of_a_save_under_way(tmp_path):
    state, memory = tmp_path / "state", tmp_path / "state" / "memory"
    memory.mkdir(parents=True)
    saving, lock = memory / ".ask.json.0a1b2c3d.tmp", memory / ".ask.json.lock"
    saving.write_text("being written")
    crashed = memory / ".C1.json.abcdefgh.tmp"
    crashed.write_text("half saved")
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(state), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "leftover-secret-0"}}}},
    })
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the asking process's save holds it
        with Running(tmp_path, "--config", str(config)).started() as gateway:
            line = gateway.wait_for(r".*removed \d+ temporary files.*").group(0)
            assert saving.exists() and not crashed.exists()
    finally:
        os.close(fd)
    assert "removed 1 temporary files" in line and ".ask.json" not in line
