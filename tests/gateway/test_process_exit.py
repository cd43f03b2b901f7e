"""How the ``switchboard`` process ends once its command has returned (`gateway.process_exit`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import atexit, logging, sys
    {load}
    from gateway.process_exit import exit_process
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    atexit.register(lambda: print("finalized", file=sys.stderr, flush=True))
    logging.getLogger("x").warning("the reason, logged")
    print("the answer, buffered")  # stdout is a pipe here: block-buffered until flushed
    exit_process(3)
""")


@pytest.mark.parametrize("temporal", [True, False])
def test_the_status_logs_and_output_survive_and_finalization_is_skipped_only_with_temporal_loaded(temporal):
    # With Temporal's runtime loaded, finalizing the interpreter can abort the process
    # (temporalio/sdk-python#300): it is skipped, and what finalization would have flushed is flushed first.
    load = "import temporalio.bridge.temporal_sdk_bridge" if temporal else ""
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(load=load)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "the answer, buffered\n"
    assert "the reason, logged" in done.stderr
    assert ("finalized" in done.stderr) is not temporal


WORKER = textwrap.dedent("""
    import atexit, sys
    atexit.register(lambda: print("finalized", file=sys.stderr, flush=True))
    from gateway.entry import main
    sys.argv = ["switchboard", "--config", sys.argv[1], "worker"]
    sys.exit(main())
""")
SLOW_PLUGIN = textwrap.dedent("""
    import sys, threading

    def register(ctx):  # a start that takes its time: the worker is connected to Temporal meanwhile
        print("registering", file=sys.stderr, flush=True)
        threading.Event().wait()
""")


def test_a_worker_stopped_while_it_starts_skips_finalization_too(tmp_path, temporal_server):
    # SIGTERM before the worker set its own handlers (connecting, loading its plugins: `docker stop`
    # of a worker just started) raised SystemExit past exit_process: with Temporal's runtime loaded the
    # interpreter finalized anyway, and could abort with a core dump instead of status 143.
    (tmp_path / "slow_plugin.py").write_text(SLOW_PLUGIN)
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "plugins": ["slow_plugin"],
        "lifecycle": {"engine": "temporal", "temporal": {"address": temporal_server.address,
                                                         "task_queue": "stopped-while-starting"}}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "HOME": str(tmp_path)}
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(config)], stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path)
    try:
        seen = []
        while "registering" not in (line := worker.stderr.readline()):
            assert line, f"the worker ended before loading its plugin: {seen}"
            seen.append(line)
        worker.send_signal(signal.SIGTERM)
        status = worker.wait(60)
        rest = worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stderr.close()
    assert status == 143, rest
    assert "finalized" not in rest, rest
