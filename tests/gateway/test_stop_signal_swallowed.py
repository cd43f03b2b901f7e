"""A stop signal before the command sets its own handlers raises SystemExit wherever the program is
(`gateway.entry`). Past the loading too, that exception can be swallowed: dropped in a finalizer (a
weakref's callback, of which a worker importing the Temporal SDK runs many), made into another error (3.11
wraps one raised in a class body's ``__set_name__`` in a RuntimeError), or left waiting on a plugin's
``register`` that ignores its cancellation. The command must still end as the signal asked: the worker
ran on after ``docker stop``, or said "could not start", or hung."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gateway import cli, early_signals
from gateway.config import config_from_mapping
from gateway.stop_signals import StopSignals
from tests.gateway.cli_process import EXIT_WITHIN, TIMEOUT, environment, write_config


def test_stop_signals_end_the_start_a_swallowed_stop_signal_asked_to_end(monkeypatch):
    monkeypatch.setattr(early_signals, "_caught", signal.SIGTERM)  # its handler ran; the program went on
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(SystemExit) as stop:
            StopSignals(loop, lambda: None)
    finally:
        loop.close()
    assert stop.value.code == 128 + signal.SIGTERM


LOST_IN_A_FINALIZER = """
import signal, sys
from gateway import preflight

class Finalized:
    def __del__(self):
        print("finalizer signalled", file=sys.stderr, flush=True)
        signal.raise_signal(signal.SIGTERM)  # its handler runs here: Python drops its exception

checked = preflight.check_model

async def check_model(settings, **kwargs):
    Finalized()  # garbage at once: its finalizer runs as the start checks the model, before the gateway's handlers
    await checked(settings, **kwargs)

preflight.check_model = check_model
sys.argv = ["switchboard", "run", "--set", "server.port=0"]
from gateway.entry import main
sys.exit(main())
"""


def test_a_stop_signal_lost_in_a_finalizer_after_the_loading_still_ends_the_start(tmp_path):
    env = environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-c", LOST_IN_A_FINALIZER], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    seen = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if "gateway running" in line:  # the signal was lost
                proc.kill()
                break
        proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    err = "".join(seen)
    assert "finalizer signalled" in err  # the signal did land in the finalizer
    assert proc.returncode == 128 + signal.SIGTERM and "gateway running" not in err, err[-2000:]
    assert "Exception ignored" not in err and "Traceback" not in err, err[-2000:]


class Named:
    """A class attribute whose ``__set_name__`` the signal interrupts."""

    def __set_name__(self, owner: type, name: str) -> None:
        signal.raise_signal(signal.SIGUSR1)


def test_a_stop_signal_made_into_another_error_is_no_failure_to_start(capsys, monkeypatch):
    async def start() -> int:
        class Settings:  # as a module of the Temporal SDK defines them, imported once the worker's loop runs
            payload_limits = Named()

        return 0

    monkeypatch.setattr(early_signals, "_caught", None)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # `_terminate` sets its own
    before = signal.signal(signal.SIGUSR1, early_signals.terminate)
    try:
        status = cli._run_to_end(start(), config_from_mapping({}).config)
    finally:
        signal.signal(signal.SIGUSR1, before)
    assert status == 128 + signal.SIGUSR1
    assert "could not start" not in capsys.readouterr().err


STUBBORN_PLUGIN = textwrap.dedent("""
    import asyncio, sys

    async def register(ctx):  # ignores its cancellation, as a retry loop that catches everything does
        # Said once it waits: a signal between the line and the wait ended register() itself, ignoring nothing.
        asyncio.get_running_loop().call_soon(lambda: print("registering", file=sys.stderr, flush=True))
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                pass
""")


@pytest.mark.timeout(TIMEOUT + EXIT_WITHIN)
def test_a_stop_signal_while_a_plugin_ignores_its_cancellation_still_ends_the_command(tmp_path):
    # `ask` sets no handlers of its own (a worker loads its plugins before it sets them): the SystemExit left
    # the event loop, and the runner's clean-up waited for ever on the plugin's register().
    (tmp_path / "stubborn_plugin.py").write_text(STUBBORN_PLUGIN)
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "plugins": ["stubborn_plugin"]})
    env = environment(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    script = Path(sys.executable).with_name("switchboard")
    proc = subprocess.Popen([str(script), "--config", str(config), "ask", "hello"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stderr is not None
        seen = []
        while "registering" not in (line := proc.stderr.readline()):
            assert line, f"it ended before loading its plugin: {seen}"
            seen.append(line)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {EXIT_WITHIN}s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Traceback" not in err and "switchboard:" not in err, err[-2000:]
    assert "it ignores cancellation" in err and "stubborn_plugin" in err  # named, as at any stop
