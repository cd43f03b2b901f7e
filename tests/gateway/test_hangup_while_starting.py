"""SIGHUP (the terminal closed) while the installed ``switchboard`` still loads or checks the model server ends
it as SIGTERM then does, status 129 and no traceback, where its default action killed it outright; one the
process was started ignoring (``nohup``) stays ignored, as it does once the gateway runs."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.cli_process import TIMEOUT, environment, write_config
from tests.gateway.test_hangup import HANGUP_DEFAULT, hangup_ignored
from tests.gateway.test_stop_while_starting import CALL_WITHIN, EXIT_WITHIN

SCRIPT = str(Path(sys.executable).with_name("switchboard"))


def ended(proc: subprocess.Popen, within: float) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {within}s after SIGHUP")
    return proc.returncode, err


def test_a_hangup_while_the_program_loads_ends_it_as_sigterm_does(tmp_path):
    env = environment(tmp_path, PYTHONPROFILEIMPORTTIME="1", SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen([*HANGUP_DEFAULT, SCRIPT, "run", "--set", "server.port=0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.rstrip().endswith("gateway.errors"):  # one of the first of the gateway's own modules
                proc.send_signal(signal.SIGHUP)
                break
        status, err = ended(proc, TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err, err[-2000:]
    assert status == 128 + signal.SIGHUP  # it was -1: killed by the signal


def model_check_config(tmp_path, model: socket.socket) -> Path:
    return write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "model": {"provider": "openai", "name": "m", "api_key": "k-0",
                  "base_url": f"http://127.0.0.1:{model.getsockname()[1]}/v1"},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "hangup-secret-0"}}}},
    })


def model_checked(model: socket.socket, proc: subprocess.Popen) -> socket.socket:
    """The start's connection to the model server, which never answers it: the start waits in its check."""
    model.settimeout(CALL_WITHIN)
    try:
        return model.accept()[0]
    except TimeoutError:
        pytest.fail(f"no model check within {CALL_WITHIN}s (exit status {proc.poll()})")


@pytest.mark.timeout(CALL_WITHIN + TIMEOUT)
@pytest.mark.parametrize("ignoring", [False, True], ids=["hangup", "nohup"])
def test_a_hangup_while_the_model_server_is_checked(tmp_path, ignoring):
    prefix = ["sh", "-c", 'trap "" HUP; exec "$@"', "nohup"] if ignoring else HANGUP_DEFAULT
    with socket.socket() as model:
        model.bind(("127.0.0.1", 0))
        model.listen()
        proc = subprocess.Popen([*prefix, SCRIPT, "run", "--config", str(model_check_config(tmp_path, model))],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=tmp_path, env=environment(tmp_path))
        try:
            with model_checked(model, proc):
                if ignoring:
                    assert hangup_ignored(proc.pid)  # by the kernel: no handler was set over nohup's
                    proc.send_signal(signal.SIGTERM)
                    status, err = ended(proc, EXIT_WITHIN)
                    assert status == 128 + signal.SIGTERM and "Traceback" not in err, err[-2000:]
                    return
                proc.send_signal(signal.SIGHUP)
                status, err = ended(proc, EXIT_WITHIN)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert "Traceback" not in err, err[-2000:]
    assert status == 128 + signal.SIGHUP  # it was -1: killed by the signal
