"""A stop signal while `switchboard worker` loads its plugins, before it handles signals itself, ends it with
the signal's status through the same clean-up as a later stop: the delegation backends the plugins registered
are closed (a plugin's releases its clients there). Both skipped it: a signal that landed while a plugin
loaded, and one a plugin swallowed (`gateway.early_signals.lost_stop`), owed until the worker set its handlers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.gateway.cli_process import EXIT_WITHIN, TIMEOUT, environment, write_config

pytest.importorskip("temporalio")

BACKEND = textwrap.dedent("""
    import signal, sys

    class Backend:
        name = "closing"

        def options(self):
            return []

        def resolve(self, route):
            raise LookupError(route)

        async def aclose(self):  # what a plugin's backend releases at the stop (its model clients)
            print("backend closed", file=sys.stderr, flush=True)
""")
SWALLOWING_PLUGIN = BACKEND + textwrap.dedent("""
    async def register(ctx):
        ctx.register_delegation_backend(Backend())
        try:
            signal.raise_signal(signal.SIGTERM)  # `docker stop` now: its handler raises SystemExit here
        except BaseException:  # the plugin takes any exception for a failure of its own, and goes on
            print("signal swallowed", file=sys.stderr, flush=True)
""")
REGISTERING_PLUGIN = BACKEND + textwrap.dedent("""
    async def register(ctx):
        ctx.register_delegation_backend(Backend())
""")
SLOW_PLUGIN = textwrap.dedent("""
    import sys, threading

    def register(ctx):  # a start that takes its time: the stop comes meanwhile
        print("registering", file=sys.stderr, flush=True)
        threading.Event().wait()
""")


def worker(tmp_path: Path, temporal_address: str, **plugins: str) -> subprocess.Popen[str]:
    for name, source in plugins.items():
        (tmp_path / f"{name}.py").write_text(source)
    config = write_config(tmp_path / "c.yaml", {
        "plugins": list(plugins),
        "lifecycle": {"engine": "temporal", "temporal": {"address": temporal_address,
                                                         "task_queue": "stop-clean-up"}}})
    env = environment(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    script = Path(sys.executable).with_name("switchboard")  # `gateway.entry`, which sets the early handlers
    return subprocess.Popen([str(script), "--config", str(config), "worker"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)


def ended(proc: subprocess.Popen[str], within: float) -> str:
    """What ``proc`` wrote to stderr (a few lines, which the pipe holds), once it has ended within ``within``
    seconds. Read through its stream, which `readline` may have read ahead into: `communicate` reads the pipe."""
    assert proc.stderr is not None
    try:
        proc.wait(within)
        return proc.stderr.read()
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {within}s on")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # and its pipes closed


@pytest.mark.timeout(TIMEOUT + EXIT_WITHIN)
def test_a_stop_owed_since_the_loading_closes_what_the_worker_opened(tmp_path, temporal_server):
    proc = worker(tmp_path, temporal_server.address, swallowing_plugin=SWALLOWING_PLUGIN)
    err = ended(proc, TIMEOUT)
    assert "signal swallowed" in err  # the stop was owed, not taken
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "backend closed" in err, err[-2000:]
    assert "running children" not in err and "Traceback" not in err, err[-2000:]


@pytest.mark.timeout(TIMEOUT + EXIT_WITHIN)
def test_a_stop_while_a_plugin_loads_closes_what_the_plugins_before_it_registered(tmp_path, temporal_server):
    proc = worker(tmp_path, temporal_server.address, registering_plugin=REGISTERING_PLUGIN, slow_plugin=SLOW_PLUGIN)
    assert proc.stderr is not None
    seen = []
    while "registering" not in (line := proc.stderr.readline()):
        assert line, f"it ended before loading its plugins: {seen}"
        seen.append(line)
    proc.send_signal(signal.SIGTERM)
    err = ended(proc, EXIT_WITHIN)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "backend closed" in err and "Traceback" not in err, err[-2000:]
