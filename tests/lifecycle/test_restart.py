"""Durability across a SIGKILL: finished children keep their results, running ones are INTERRUPTED."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from lifecycle import SubagentResult

ROOT = Path(__file__).resolve().parents[2]


def worker(mode, db, out):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.lifecycle.restart_worker", mode, str(db), str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def kill_while_running(db, out):
    with worker("run", db, out) as first:
        line = first.stdout.readline()
        first.send_signal(signal.SIGKILL)
        assert line.strip() == "READY", first.stderr.read()


def check(db, out):
    with worker("check", db, out) as proc:
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


def test_results_survive_and_running_children_are_interrupted_after_sigkill(tmp_path):
    db, out = tmp_path / "journal.db", tmp_path / "handles.json"
    kill_while_running(db, out)
    report = check(db, out)
    done, running = report["done"], report["running"]
    assert (done["connected"], done["state"]) == (True, "SUCCEEDED")
    result = SubagentResult.from_dict(done["result"])
    assert result.summary == "done: finish quickly"
    assert result.result_hash and result.ready
    assert (running["connected"], running["state"]) == (True, "INTERRUPTED")
    assert running["result"]["error_message"] == "interrupted by process exit"
    assert report["unknown"] == "RECONNECT_UNAVAILABLE"


def test_the_same_result_and_hash_are_read_twice_after_restart(tmp_path):
    db, out = tmp_path / "journal.db", tmp_path / "handles.json"
    kill_while_running(db, out)
    reports = [check(db, out), check(db, out)]
    assert reports[0]["done"]["result"] == reports[1]["done"]["result"]
    assert reports[0]["running"]["result"] == reports[1]["running"]["result"]
