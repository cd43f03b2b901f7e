"""Closing the terminal `switchboard run` (or `chat`) is in sends SIGHUP: a graceful stop, not a
crash the next start charges the running turn's message for; under ``nohup`` it is ignored."""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

from tests.gateway.cli_process import TIMEOUT, Running, write_config


def config(tmp_path):
    return write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "hangup-secret-0"}}}},
    })


def hangup_ignored(pid: int) -> bool:
    """Whether the process ignores SIGHUP, as /proc says (bit 0 of SigIgn is signal 1)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) & 1 << (signal.SIGHUP - 1))


def stopped_cleanly(tmp_path) -> str:
    with sqlite3.connect(tmp_path / "state" / "switchboard.db") as db:
        return db.execute("SELECT value FROM gateway_meta WHERE key='stopped_cleanly'").fetchone()[0]


HANGUP_DEFAULT = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_DFL);"
                  " os.execvp(sys.argv[1], sys.argv[1:])"]
"""Runs what follows with SIGHUP's default action, also when the tests themselves run under nohup
(which a child inherits, and which the gateway then rightly keeps)."""


def test_a_hangup_stops_the_gateway_gracefully(tmp_path):
    with Running(tmp_path, "--config", str(config(tmp_path)), prefix=HANGUP_DEFAULT).started() as gateway:
        gateway.proc.send_signal(signal.SIGHUP)
        assert gateway.proc.wait(TIMEOUT) == 0, gateway.lines[-5:]
        gateway.wait_for("shutting down")
    assert stopped_cleanly(tmp_path) == "1"


def test_a_gateway_started_under_nohup_outlives_the_hangup(tmp_path):
    ignoring = ["sh", "-c", 'trap "" HUP; exec "$@"', "nohup"]
    with Running(tmp_path, "--config", str(config(tmp_path)), prefix=ignoring).started() as gateway:
        assert hangup_ignored(gateway.proc.pid)  # by the kernel: the gateway set no handler over nohup's
        gateway.proc.send_signal(signal.SIGHUP)
        assert gateway.proc.poll() is None
        gateway.ends_on_sigterm(TIMEOUT)
    assert stopped_cleanly(tmp_path) == "1"
