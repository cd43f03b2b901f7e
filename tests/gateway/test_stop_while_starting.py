"""Ctrl-C or SIGTERM while `switchboard run` is still starting ends the process at once, cleanly:
while a platform is slow to answer (instead of once it has answered or given up a minute later,
past `docker stop`'s grace and systemd's patience), and while the program is still loading."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gateway.cli_process import EXIT_WITHIN, TIMEOUT, Running, environment, write_config

TOKEN = "777003:AAE-abcdefghijklmnopqrstuvwxyz0123456"
CALL_WITHIN = 60.0
"""Seconds from the start to the gateway's first call to the platform: the program loads first
(aiogram alone takes seconds of CPU), which took over 30 s on a loaded 2-core machine."""


def first_call(api: socket.socket, gateway: Running) -> socket.socket:
    """The gateway's first connection to ``api``; fails at once, with its log, if it exited first."""
    deadline = time.monotonic() + CALL_WITHIN
    api.settimeout(0.5)
    while True:
        try:
            return api.accept()[0]
        except TimeoutError:
            if gateway.proc.poll() is not None:
                pytest.fail(f"the gateway exited ({gateway.proc.returncode}) before calling the platform: "
                            f"{gateway.lines[-5:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no call to the platform within {CALL_WITHIN}s: {gateway.lines[-5:]}")


@pytest.mark.timeout(CALL_WITHIN + EXIT_WITHIN + TIMEOUT)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_a_platform_is_starting_stops_the_start(tmp_path, signum):
    # A Bot API that takes the connection and never answers: the start waits on getMe.
    with socket.socket() as api:
        api.bind(("127.0.0.1", 0))
        api.listen()
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "platforms": {"telegram": {"enabled": True, "token": TOKEN, "allow_all": True,
                                       "api_base": f"http://127.0.0.1:{api.getsockname()[1]}"}},
        })
        with Running(tmp_path, "--config", str(config)) as gateway:
            connection = first_call(api, gateway)  # the gateway's first call to the platform is in flight
            with connection:
                gateway.proc.send_signal(signum)
                try:
                    code = gateway.proc.wait(EXIT_WITHIN)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"still starting {EXIT_WITHIN}s after {signum.name}: {gateway.lines[-5:]}")
            assert code == 0, gateway.lines
            gateway.wait_for("stopped before it had started")
            assert not any("Traceback" in line or line.startswith("switchboard:") for line in gateway.lines)


def test_ctrl_c_while_the_program_loads_is_no_traceback(tmp_path):
    """The installed `switchboard` command, interrupted while it still imports its modules (the
    first second or more of every command), the way a user's Ctrl-C often lands."""
    script = Path(sys.executable).with_name("switchboard")
    # Python reports each module it has imported on stderr: the signal lands in the middle of them.
    env = environment(tmp_path, PYTHONPROFILEIMPORTTIME="1", SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen([str(script), "run", "--set", "server.port=0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.rstrip().endswith("gateway.errors"):  # one of the first of the gateway's own modules
                proc.send_signal(signal.SIGINT)
                break
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    assert proc.returncode == 130


def test_sigterm_while_the_program_loads_as_a_containers_pid_1_ends_it(tmp_path):
    """In a container `switchboard run` is PID 1, which the kernel spares every signal it set no
    handler for: SIGTERM (`docker stop`) while it still loaded did nothing, and Docker killed it."""
    prefix = ["unshare", "-rpf"]  # a new PID namespace in which the command is PID 1
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode:
        pytest.skip("needs user and PID namespaces")
    script = Path(sys.executable).with_name("switchboard")
    env = environment(tmp_path, PYTHONPROFILEIMPORTTIME="1", SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen([*prefix, str(script), "run", "--set", "server.port=0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    pid_1 = None
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.rstrip().endswith("gateway.errors"):
                (pid_1,) = map(int, Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
                os.kill(pid_1, signal.SIGTERM)
                break
        try:
            _, err = proc.communicate(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"PID 1 still running {EXIT_WITHIN}s after SIGTERM")
    finally:
        if proc.poll() is None:
            if pid_1 is not None:
                os.kill(pid_1, signal.SIGKILL)  # the only signal the kernel delivers to it regardless
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err, err[-2000:]
    assert proc.returncode == 128 + signal.SIGTERM


LOST_IN_A_FINALIZER = """
import os, signal, sys

class Finalized:
    def __del__(self):
        print("finalizer signalled", file=sys.stderr, flush=True)
        os.kill(os.getpid(), {signum})
        for _ in range(10_000):  # the signal's handler runs here: Python reports its exception and drops it
            pass

class WhileLoading:
    def find_spec(self, name, path=None, target=None):
        if name == "gateway.cli":
            sys.meta_path.remove(self)
            Finalized()  # garbage at once: its finalizer runs now, in the middle of the program's loading
        return None

sys.meta_path.insert(0, WhileLoading())
sys.argv = ["switchboard", "run", "--set", "server.port=0"]
from gateway.entry import main
sys.exit(main())
"""


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_whose_handler_ran_in_a_finalizer_while_loading_still_ends_it(tmp_path, signum, status):
    """A signal lands wherever the program is, a finalizer too (an object's ``__del__``, a weakref's
    callback; the loading makes garbage, so the collector runs them): Python only prints the exception
    its handler raised there ("Exception ignored in ...") and goes on, so the gateway started and ran;
    the program ends as the signal would have, and that exception, no error, is not printed."""
    env = environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-c", LOST_IN_A_FINALIZER.format(signum=int(signum))],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=env)
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "finalizer signalled" in err  # the signal did land in the finalizer
    assert proc.returncode == status and "gateway running" not in err, err[-2000:]
    assert "Exception ignored" not in err and "Traceback" not in err, err[-2000:]
